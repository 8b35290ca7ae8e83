import { randomBytes } from 'node:crypto';
import type { NoticePage, SubscriptionVerifyWebhook } from '@telemetry/contract';
import { escapeHtml, sendHttp, signature, type ChannelContext, type MailMessage } from '@telemetry/alerting';
import type { SubscriptionLinks } from '@telemetry/store';

/**
 * What the subscription routes send (docs/api.md, "Subscribers"): the confirmation mail of
 * an email subscriber, and the signed challenge a webhook subscriber's URL must answer
 * before it is stored.
 */

/** A webhook subscriber's signing secret: shown once, sealed in its row. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64url')}`;
}

/** The page a subscription is to, as webhook bodies name it. */
export function noticePage(publicUrl: string, slug: string, title: string): NoticePage {
  return { slug, title, url: `${publicUrl.replace(/\/+$/, '')}/status/${slug}` };
}

/** The confirmation mail: both links in the text and HTML, RFC 8058 headers. */
export function confirmationMail(
  links: SubscriptionLinks,
  page: NoticePage,
  to: { id: string; email: string; expiresAtMs: number },
): MailMessage {
  const confirm = links.confirmLink(page.slug, to.id, to.expiresAtMs);
  const unsubscribe = links.unsubscribeLink(page.slug, to.id);
  const until = new Date(Math.floor(to.expiresAtMs / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const text =
    `Someone (we hope you) asked to be told about ${page.title} (${page.url}) at this address.\n\n` +
    `Confirm the subscription: ${confirm}\n\n` +
    `The link works until ${until}. If you did not ask, ignore this mail: nothing more will be sent.\n\n` +
    `Unsubscribe: ${unsubscribe}\n`;
  const html =
    `<p>Someone (we hope you) asked to be told about <a href="${escapeHtml(page.url)}">${escapeHtml(page.title)}</a> at this address.</p>` +
    `<p><a href="${escapeHtml(confirm)}">Confirm the subscription</a></p>` +
    `<p>The link works until ${until}. If you did not ask, ignore this mail: nothing more will be sent.</p>` +
    `<p><a href="${escapeHtml(unsubscribe)}">Unsubscribe</a></p>`;
  return {
    to: to.email,
    subject: `Confirm your subscription to ${page.title.replace(/\s+/g, ' ').slice(0, 200)}`,
    text,
    html,
    messageId: `<${to.id}.${to.expiresAtMs}@subscriptions.telemetry>`,
    headers: links.mailHeaders(page.slug, to.id),
  };
}

/** Why a URL failed its verification (`details.reason` of WEBHOOK_VERIFICATION_FAILED). */
export type VerifyFailure =
  { reason: 'no_answer'; error: string } | { reason: 'status'; status: number } | { reason: 'challenge' };

/** Whether a 2xx body answers the challenge: the whole body (spaces around ignored), or JSON `{"challenge": …}`. */
export function answersChallenge(body: string, challenge: string): boolean {
  if (body.trim() === challenge) return true;
  try {
    const json = JSON.parse(body) as unknown;
    return typeof json === 'object' && json !== null && (json as { challenge?: unknown }).challenge === challenge;
  } catch {
    return false;
  }
}

/**
 * Sends `url` one signed SubscriptionVerifyWebhook through the egress-bound client (no
 * redirects, `ctx.timeoutMs` for the whole exchange) and judges its answer. Undefined when
 * it answered the challenge; `target_not_allowed` when the policy refused the address the
 * name resolved to (nothing was sent).
 */
export async function verifyWebhook(
  ctx: ChannelContext,
  url: string,
  secret: string,
  page: NoticePage,
): Promise<VerifyFailure | 'target_not_allowed' | undefined> {
  const challenge = randomBytes(24).toString('base64url');
  const verify: SubscriptionVerifyWebhook = { type: 'subscription.verify', challenge, page };
  const body = JSON.stringify(verify);
  const answer = await sendHttp(
    {
      url,
      headers: {
        'X-Telemetry-Event': 'subscription.verify',
        'X-Telemetry-Signature': signature(secret, body, Math.floor(ctx.now() / 1000)),
      },
      body,
    },
    ctx,
  );
  if (answer.error === 'target_not_allowed') return 'target_not_allowed';
  if (answer.error !== undefined || answer.statusCode === 0)
    return { reason: 'no_answer', error: answer.error ?? 'network' };
  if (answer.statusCode < 200 || answer.statusCode >= 300) return { reason: 'status', status: answer.statusCode };
  return answersChallenge(answer.response ?? '', challenge) ? undefined : { reason: 'challenge' };
}
