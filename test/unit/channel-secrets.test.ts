import { expect } from 'chai';
import { maskConfig, unmaskConfig } from '@telemetry/store';

/** A channel's write-only secrets (docs/alerting.md, "Channels"): shown masked, kept when sent back, never moved to another host. */
describe('channel secrets (unit)', () => {
  const telegram = {
    bot_token: '123456:ABCDEFGHIJKLMNOPQRSTUVWXYZabcd',
    chat_id: '42',
    api_url: 'https://telegram-api.example.test',
  };

  it('shows each secret masked: a URL as its scheme and host, anything else as ****', () => {
    expect(maskConfig('telegram', telegram)).to.deep.equal({ ...telegram, bot_token: '****' });
    expect(maskConfig('slack', { url: 'https://hooks.slack.example.test/services/T0/B0/secret' })).to.deep.equal({
      url: 'https://hooks.slack.example.test',
    });
  });

  it('keeps a secret sent back as shown while the channel connects where it did', () => {
    const shown = maskConfig('telegram', telegram);
    expect(unmaskConfig('telegram', telegram, { ...shown, chat_id: '43' })).to.deep.equal({
      config: { ...telegram, chat_id: '43' },
      problems: [],
    });
    const hook = { url: 'https://hooks.example.test/path/token', secret: 'whsec_0123456789abcdef' };
    expect(unmaskConfig('webhook', hook, maskConfig('webhook', hook)).config).to.deep.equal(hook);
  });

  it('never sends a kept secret to another host: a masked secret with a new address is refused at its path', () => {
    const moved = unmaskConfig('telegram', telegram, {
      ...maskConfig('telegram', telegram),
      api_url: 'https://elsewhere.example.test',
    });
    expect(moved.problems.map((p) => p.path)).to.deep.equal(['/config/bot_token']);
    expect(JSON.stringify(moved.config)).not.to.include(telegram.bot_token);
    const hook = { url: 'https://hooks.example.test/path/token', secret: 'whsec_0123456789abcdef' };
    const rehomed = unmaskConfig('webhook', hook, { url: 'https://elsewhere.example.test/x', secret: '****' });
    expect(rehomed.problems.map((p) => p.path)).to.deep.equal(['/config/secret']);
    const pd = { routing_key: 'a'.repeat(32) };
    expect(
      unmaskConfig('pagerduty', pd, { routing_key: '****', api_url: 'https://x.example.test/v2/enqueue' }).problems,
    ).to.have.length(1);
  });

  it('takes a new secret as sent, with any address', () => {
    const fresh = {
      ...telegram,
      bot_token: '999:ZYXWVUTSRQPONMLKJIHGFEDCBAzyxw',
      api_url: 'https://elsewhere.example.test',
    };
    expect(unmaskConfig('telegram', telegram, fresh)).to.deep.equal({ config: fresh, problems: [] });
  });
});
