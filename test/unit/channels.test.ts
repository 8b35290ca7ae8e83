import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import {
  CHANNEL_CONFIG_SCHEMAS,
  CHANNEL_TYPES,
  createChannelValidators,
  validateChannelTarget,
  type WebhookChannelConfig,
} from '@telemetry/contract';
import type { HttpCall } from '@telemetry/platform';
import { HttpCallError } from '@telemetry/platform';
import { CHANNELS, type ChannelContext, type ChannelRegistry } from '@telemetry/alerting';
import { webhookChannel } from '../../libs/alerting/src/channels/webhook.js';
import { targetsOf } from '../../services/check-runner/src/targets.js';
import { noMail, notify, sampleAlert } from './support/fakes.js';

const alert = sampleAlert;

const config: WebhookChannelConfig = {
  url: 'https://hooks.example.test/services/T0/B0/xyz?token=s3cret',
  secret: 'whsec_0123456789abcdef0123456789abcdef',
};

/** Compiled once, as a composition root would. */
const validators = createChannelValidators();

describe('alert channels (unit)', () => {
  describe('the registry', () => {
    it('has exactly one channel per channel type, each under its own type', () => {
      expect(Object.keys(CHANNELS).sort()).to.deep.equal([...CHANNEL_TYPES].sort());
      for (const t of CHANNEL_TYPES) expect(CHANNELS[t].type).to.equal(t);
      expect(Object.keys(CHANNEL_CONFIG_SCHEMAS).sort()).to.deep.equal([...CHANNEL_TYPES].sort());
    });

    it('refuses, at compile time, a registry that lacks a type (tsc -b checks the test files)', () => {
      // NOTE: the proof is the directive: `npx tsc -b` fails with "Unused '@ts-expect-error'"
      // if a registry without a channel for every CHANNEL_TYPES value ever compiles.
      // @ts-expect-error Property 'webhook' is missing
      const missing: ChannelRegistry = {};
      expect(Object.keys(missing)).to.deep.equal([]);
    });

    it('turns a monitor’s webhooks into webhook targets signed with its secret, in order', () => {
      const targets = targetsOf({
        webhooks: ['https://a.example.test/1', 'https://b.example.test/2'],
        webhook_secret: 's',
      });
      expect(targets).to.deep.equal([
        { type: 'webhook', config: { url: 'https://a.example.test/1', secret: 's' } },
        { type: 'webhook', config: { url: 'https://b.example.test/2', secret: 's' } },
      ]);
      expect(targetsOf({ webhooks: [], webhook_secret: 's' })).to.deep.equal([]);
    });
  });

  describe('config validation (libs/contract, usable by any service)', () => {
    it('accepts a webhook config and reports each problem at its path', () => {
      expect(webhookChannel.validate(config, validators)).to.deep.equal([]);
      const paths = webhookChannel
        .validate({ url: 'ftp://hooks.example.test/', secret: 'short', extra: 1 }, validators)
        .map((p) => p.path);
      expect(paths).to.include.members(['/url', '/secret', '/extra']);
      expect(
        webhookChannel.validate({ url: 'http://1.2.3.4.5/', secret: config.secret }, validators).map((p) => p.path),
      ).to.deep.equal(['/url']);
    });

    it('validates a whole target: its type, then its config under /config', () => {
      const v = createChannelValidators();
      const ok = validateChannelTarget(v, { type: 'webhook', config });
      expect(ok).to.deep.equal({ ok: true, target: { type: 'webhook', config } });
      const problems = (value: unknown): string[] => {
        const r = validateChannelTarget(v, value);
        return r.ok ? [] : r.problems.map((p) => `${p.path} ${p.message}`);
      };
      expect(problems({ type: 'no_such_channel', config })).to.deep.equal([
        `/type must be one of ${CHANNEL_TYPES.join(', ')}`,
      ]);
      expect(problems({ config })).to.deep.equal(['/type is required']);
      expect(problems({ type: 'webhook' })).to.deep.equal(['/config is required']);
      expect(problems({ type: 'webhook', config: { url: config.url } })).to.deep.equal(['/config/secret is required']);
      expect(problems({ type: 'webhook', config: [] })).to.deep.equal(['/config must be object']);
      expect(problems({ type: 'webhook', config, name: 'x' })).to.deep.equal(['/name is not an allowed field']);
      expect(problems('webhook')).to.deep.equal(['/ must be object']);
    });
  });

  describe('the webhook channel', () => {
    const now = 1_700_000_000_987;

    it('renders the alert message as the body and the documented headers, signed as docs/monitors.md says', () => {
      const r = webhookChannel.render(notify(alert, 3), config, { templates: {}, name: 'hook', now });
      expect(r.body).to.equal(JSON.stringify(alert));
      expect(Object.keys(r.headers)).to.deep.equal([
        'X-Telemetry-Event',
        'X-Telemetry-Delivery',
        'X-Telemetry-Attempt',
        'X-Telemetry-Signature',
      ]);
      expect(r.headers).to.include({
        'X-Telemetry-Event': 'monitor.down',
        'X-Telemetry-Delivery': alert.id,
        'X-Telemetry-Attempt': '3',
      });
      // The receiver's check, as documented: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">.
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(r.headers['X-Telemetry-Signature']!) ?? [];
      expect(t).to.equal('1700000000');
      expect(v1).to.equal(createHmac('sha256', config.secret).update(`1700000000.${r.body}`).digest('hex'));
    });

    it('sends one POST, no redirects followed, Content-Type and User-Agent first, within the timeout', async () => {
      const calls: Omit<HttpCall, 'policy'>[] = [];
      const ctx: ChannelContext = {
        http: (call) => {
          calls.push(call);
          return Promise.resolve({ statusCode: 202, headers: {}, body: Buffer.alloc(0), truncated: false });
        },
        mail: noMail,
        userAgent: 'ua/1',
        timeoutMs: 1234,
        signal: new AbortController().signal,
        now: () => now,
      };
      const r = webhookChannel.render(notify(alert, 1), config, { templates: {}, name: 'hook', now });
      expect(await webhookChannel.send(r, config, ctx)).to.deep.equal({ statusCode: 202, response: '' });
      expect(calls).to.have.length(1);
      expect(calls[0]).to.deep.include({
        url: config.url,
        method: 'POST',
        body: r.body,
        timeoutMs: 1234,
        maxRedirects: 0,
      });
      expect(Object.entries(calls[0]!.headers)).to.deep.equal([
        ['Content-Type', 'application/json'],
        ['User-Agent', 'ua/1'],
        ...Object.entries(r.headers),
      ]);
    });

    it('turns a failed call into an answer with its error kind (anything unknown: network)', async () => {
      const failing = (err: Error): ChannelContext => ({
        http: () => Promise.reject(err),
        mail: noMail,
        userAgent: 'ua',
        timeoutMs: 1000,
        signal: new AbortController().signal,
        now: () => now,
      });
      const r = webhookChannel.render(notify(alert, 1), config, { templates: {}, name: 'hook', now });
      expect(await webhookChannel.send(r, config, failing(new HttpCallError('timeout', 'no answer')))).to.include({
        statusCode: 0,
        error: 'timeout',
      });
      expect(await webhookChannel.send(r, config, failing(new Error('boom')))).to.include({
        statusCode: 0,
        error: 'network',
      });
    });

    it('classifies as before: 2xx delivered; 408, 425, 429, 5xx and errors retried; other answers and the egress policy given up', () => {
      const verdict = (statusCode: number, error?: 'timeout' | 'target_not_allowed' | 'connection_refused'): string =>
        webhookChannel.classify(error === undefined ? { statusCode } : { statusCode, error });
      expect([200, 201, 204, 299].map((s) => verdict(s))).to.deep.equal(Array(4).fill('delivered'));
      expect([408, 425, 429, 500, 502, 503, 599].map((s) => verdict(s))).to.deep.equal(Array(7).fill('retry'));
      expect([100, 301, 302, 400, 401, 404, 410, 422].map((s) => verdict(s))).to.deep.equal(Array(8).fill('give_up'));
      expect([verdict(0, 'timeout'), verdict(0, 'connection_refused')]).to.deep.equal(['retry', 'retry']);
      expect(verdict(0, 'target_not_allowed')).to.equal('give_up');
    });

    it('queues per URL (its origin and a digest: one tenant’s hook never holds another’s) and shows scheme and host only', () => {
      expect(webhookChannel.endpoint(config)).to.match(/^https:\/\/hooks\.example\.test [0-9a-f]{16}$/);
      expect(webhookChannel.endpoint({ ...config, url: 'https://hooks.example.test:8443/x' })).to.match(
        /^https:\/\/hooks\.example\.test:8443 [0-9a-f]{16}$/,
      );
      expect(webhookChannel.endpoint({ ...config, url: `${config.url}/other` })).not.to.equal(
        webhookChannel.endpoint(config),
      );
      expect(webhookChannel.endpoint({ ...config })).to.equal(webhookChannel.endpoint(config));
      expect(webhookChannel.shown({ ...config, url: 'https://u:pw@hooks.example.test/p?token=s3cret' })).to.equal(
        'https://hooks.example.test',
      );
    });
  });
});
