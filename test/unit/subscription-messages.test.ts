import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { SubscriptionLinks } from '../../libs/store/src/status/subscription-links.js';
import {
  answersChallenge,
  confirmationMail,
  newWebhookSecret,
  noticePage,
} from '../../services/query-service/src/status/subscription-messages.js';

describe('status subscription messages: the challenge and the confirmation mail (unit)', () => {
  it('takes the challenge as the whole body (spaces around it ignored) or as JSON {challenge}, nothing else', () => {
    const c = 'q3Zk_challenge-1234567890abcdefghij';
    expect(answersChallenge(c, c)).to.equal(true);
    expect(answersChallenge(` ${c}\n`, c)).to.equal(true);
    expect(answersChallenge(JSON.stringify({ challenge: c, extra: 1 }), c)).to.equal(true);
    for (const wrong of [
      '',
      'ok',
      `${c}x`,
      JSON.stringify({ challenge: 'other' }),
      JSON.stringify([c]),
      `"${c}"`,
      'null',
    ])
      expect(answersChallenge(wrong, c), wrong).to.equal(false);
  });

  it('mails both links, the RFC 8058 headers and the page title; the secret is whsec_ and random', () => {
    const links = new SubscriptionLinks([{ id: 'k', key: randomBytes(32) }], 'https://status.example.test/');
    const page = noticePage('https://status.example.test/', 'shop', 'Shop <status>');
    expect(page.url).to.equal('https://status.example.test/status/shop');
    const id = `sub_${'c'.repeat(20)}`;
    const m = confirmationMail(links, page, { id, email: 'ann@example.com', expiresAtMs: Date.now() + 60_000 });
    expect(m.to).to.equal('ann@example.com');
    expect(m.subject).to.equal('Confirm your subscription to Shop <status>');
    const confirm = /#confirm=(\S+)/.exec(m.text)![1]!;
    const unsubscribe = /#unsubscribe=(\S+)/.exec(m.text)![1]!;
    expect(links.verify('confirm', confirm, 'shop')).to.equal(id);
    expect(links.verify('unsubscribe', unsubscribe, 'shop')).to.equal(id);
    expect(m.headers).to.deep.equal(links.mailHeaders('shop', id));
    expect(m.html).to.contain('Shop &lt;status&gt;').and.not.contain('<status>');
    expect(newWebhookSecret()).to.match(/^whsec_[A-Za-z0-9_-]{32}$/);
    expect(newWebhookSecret()).not.to.equal(newWebhookSecret());
  });
});
