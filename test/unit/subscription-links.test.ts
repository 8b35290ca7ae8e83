import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../libs/platform/src/secret-box.js';
import {
  openSubscriberWebhook,
  sealSubscriberWebhook,
  SubscriptionLinks,
} from '../../libs/store/src/status/subscription-links.js';

const key = (id: string) => ({ id, key: randomBytes(32) });

describe('status-page subscription links (unit)', () => {
  const k1 = key('k1');
  const k2 = key('k2');
  const links = new SubscriptionLinks([k1], 'https://status.example.test/');
  const id = `sub_${'a'.repeat(20)}`;

  it('verifies a confirmation token for its page until it expires, and nothing else', () => {
    const now = Date.parse('2026-11-26T12:00:00Z');
    const t = links.token('confirm', id, 'shop', now + 60_000);
    expect(links.verify('confirm', t, 'shop', now)).to.equal(id);
    expect(links.verify('confirm', t, 'shop', now + 60_000)).to.equal(undefined);
    expect(links.verify('confirm', t, 'other', now)).to.equal(undefined);
    expect(links.verify('unsubscribe', t, 'shop', now)).to.equal(undefined);
    // Another id, a longer expiry or a flipped signature: refused.
    const [, exp, sig] = t.split('.');
    expect(links.verify('confirm', `sub_${'b'.repeat(20)}.${exp}.${sig}`, 'shop', now)).to.equal(undefined);
    expect(links.verify('confirm', `${id}.${Number(exp) + 3600}.${sig}`, 'shop', now)).to.equal(undefined);
    expect(links.verify('confirm', `${t.slice(0, -1)}${t.endsWith('A') ? 'B' : 'A'}`, 'shop', now)).to.equal(undefined);
    expect(links.verify('confirm', 'garbage', 'shop', now)).to.equal(undefined);
    // The same signature bytes, spelt with the last character's padding bits set: refused.
    const twin = `${t.slice(0, -1)}${String.fromCharCode(t.charCodeAt(t.length - 1) + 1)}`;
    expect(Buffer.from(twin.split('.')[2]!, 'base64url')).to.deep.equal(Buffer.from(sig!, 'base64url'));
    expect(links.verify('confirm', twin, 'shop', now)).to.equal(undefined);
  });

  it('makes unsubscribe tokens that do not expire, verified by every key of the ring', () => {
    const t = links.token('unsubscribe', id, 'shop');
    expect(links.verify('unsubscribe', t, 'shop', Date.parse('2099-01-01T00:00:00Z'))).to.equal(id);
    expect(links.verify('confirm', t, 'shop')).to.equal(undefined);
    expect(new SubscriptionLinks([k2, k1], 'https://x.test').verify('unsubscribe', t, 'shop')).to.equal(id);
    expect(new SubscriptionLinks([k2], 'https://x.test').verify('unsubscribe', t, 'shop')).to.equal(undefined);
  });

  it('builds the links and the one-click headers (RFC 8058) on PUBLIC_URL', () => {
    expect(links.confirmLink('shop', id, Date.now() + 1000)).to.match(
      /^https:\/\/status\.example\.test\/status\/shop\/subscription#confirm=sub_a{20}\.\d+\.[\w-]{22}$/,
    );
    expect(links.unsubscribeLink('shop', id)).to.match(
      /\/status\/shop\/subscription#unsubscribe=sub_a{20}\.0\.[\w-]{22}$/,
    );
    const h = links.mailHeaders('shop', id);
    expect(h['List-Unsubscribe']).to.match(
      /^<https:\/\/status\.example\.test\/api\/status\/shop\/unsubscribe\?token=sub_a{20}\.0\.[\w-]{22}>$/,
    );
    expect(h['List-Unsubscribe-Post']).to.equal('List-Unsubscribe=One-Click');
  });

  it('seals a webhook subscriber for its row only', () => {
    const box = new SecretBox([k1]);
    const sealed = sealSubscriberWebhook(box, id, { url: 'https://hooks.example.test/x?token=t', secret: 'whsec_1' });
    expect(sealed).to.not.contain('hooks.example.test');
    expect(openSubscriberWebhook(box, id, sealed)).to.deep.equal({
      url: 'https://hooks.example.test/x?token=t',
      secret: 'whsec_1',
    });
    expect(() => openSubscriberWebhook(box, `sub_${'c'.repeat(20)}`, sealed)).to.throw();
  });
});
