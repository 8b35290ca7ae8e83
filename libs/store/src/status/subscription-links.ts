import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { SealingKey, SecretBox } from '@telemetry/platform';

/**
 * A status-page subscriber's links (docs/console.md, "Subscribers"): the confirmation link
 * of a new email subscription (it expires) and the unsubscribe link of every mail (it does
 * not). A token is `<subscriber id>.<expiry or 0>.<signature>`; the signature is the first
 * 16 bytes of HMAC-SHA256 under a key derived (HKDF) from a key of the SECRETS_KEYS ring
 * (the first signs, every key verifies), over the purpose, the subscriber, the page's slug
 * and the expiry: a token is worth only what it was made for, on its page.
 */

export type LinkPurpose = 'confirm' | 'unsubscribe';

const INFO = 'telemetry status subscription links v1';
const TOKEN = /^(sub_[a-z0-9]{20})\.([0-9]{1,13})\.([A-Za-z0-9_-]{22})$/;

export class SubscriptionLinks {
  private readonly keys: Buffer[];
  private readonly base: string;

  constructor(ring: readonly SealingKey[], publicUrl: string) {
    if (ring.length === 0) throw new Error('subscription links need a key');
    this.keys = ring.map((k) => Buffer.from(hkdfSync('sha256', k.key, Buffer.alloc(0), INFO, 32)));
    this.base = publicUrl.replace(/\/+$/, '');
  }

  private static mac(key: Buffer, purpose: LinkPurpose, id: string, slug: string, expiresAtS: number): Buffer {
    return createHmac('sha256', key)
      .update(JSON.stringify([purpose, id, slug, expiresAtS]))
      .digest()
      .subarray(0, 16);
  }

  /** A token for `purpose` (expiresAtMs: when a confirmation stops working; 0 for unsubscribe links). */
  token(purpose: LinkPurpose, id: string, slug: string, expiresAtMs = 0): string {
    const exp = Math.floor(expiresAtMs / 1000);
    return `${id}.${exp}.${SubscriptionLinks.mac(this.keys[0]!, purpose, id, slug, exp).toString('base64url')}`;
  }

  /**
   * The subscriber id of a token made for `purpose` on page `slug`, signed by a key of the
   * ring and (if it expires) not expired at `nowMs`; undefined for anything else.
   */
  verify(purpose: LinkPurpose, token: string, slug: string, nowMs = Date.now()): string | undefined {
    const m = TOKEN.exec(token);
    if (!m) return undefined;
    const exp = Number(m[2]);
    if (purpose === 'confirm' ? exp * 1000 <= nowMs : exp !== 0) return undefined;
    const sig = Buffer.from(m[3]!, 'base64url');
    // NOTE: the 22nd character carries 2 bits; its other 4 must be zero, or every token would
    // have a twin (a last character one higher decodes to the same bytes).
    if (sig.toString('base64url') !== m[3]) return undefined;
    return this.keys.some((k) => timingSafeEqual(SubscriptionLinks.mac(k, purpose, m[1]!, slug, exp), sig))
      ? m[1]
      : undefined;
  }

  /** The page a confirmation link opens (the token in the fragment: never sent to a server by the browser). */
  confirmLink(slug: string, id: string, expiresAtMs: number): string {
    return `${this.base}/status/${slug}/subscription#confirm=${this.token('confirm', id, slug, expiresAtMs)}`;
  }

  /** The page an email's unsubscribe link opens: one button. */
  unsubscribeLink(slug: string, id: string): string {
    return `${this.base}/status/${slug}/subscription#unsubscribe=${this.token('unsubscribe', id, slug)}`;
  }

  /** RFC 8058 one-click unsubscribe: the headers of every mail to subscriber `id`. */
  mailHeaders(slug: string, id: string): Record<string, string> {
    const url = `${this.base}/api/status/${slug}/unsubscribe?token=${this.token('unsubscribe', id, slug)}`;
    return { 'List-Unsubscribe': `<${url}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' };
  }
}

/** What a webhook subscriber's row seals: the URL (it may hold a token) and our signing secret. */
export interface SubscriberWebhook {
  url: string;
  secret: string;
}

/** The sealing context binds a sealed webhook to its subscriber row. */
const context = (subscriberId: string): string => `status_subscriber:${subscriberId}`;

export function sealSubscriberWebhook(box: SecretBox, subscriberId: string, w: SubscriberWebhook): string {
  return box.seal(JSON.stringify({ url: w.url, secret: w.secret }), context(subscriberId));
}

export function openSubscriberWebhook(box: SecretBox, subscriberId: string, sealed: string): SubscriberWebhook {
  const w = JSON.parse(box.open(sealed, context(subscriberId))) as SubscriberWebhook;
  return { url: w.url, secret: w.secret };
}
