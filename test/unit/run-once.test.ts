import { expect } from 'chai';
import { Registry } from 'prom-client';
import {
  createRunOnceValidators,
  runCapabilityOf,
  typeDefaults,
  type RunReplyMessage,
  type RunRequestMessage,
} from '@telemetry/contract';
import {
  AppError,
  KafkaMessageTooLargeError,
  newSealingKeyText,
  parseSealingKeys,
  SecretBox,
} from '@telemetry/platform';
import {
  newRunId,
  openRunReply,
  openRunRequest,
  runRequestExpired,
  sealRunReply,
  sealRunRequest,
  type RunRequestEnvelope,
  type StoredMonitor,
} from '@telemetry/store';
import {
  actsOn,
  replyPayload,
  runGroupId,
  runnerCapabilities,
  RunOnceWorker,
} from '../../services/check-runner/src/run-once.js';
import type { SlotResult } from '../../services/check-runner/src/probes/index.js';
import { runBudget, runResult, runWaitMs } from '../../services/query-service/src/run-once.route.js';
import { fakeGroupConsumers, silentLogger } from './support/fakes.js';

const box = new SecretBox(parseSealingKeys(newSealingKeyText('k1')));
const validators = createRunOnceValidators();
const settings = { ...typeDefaults('http'), name: 'form', url: 'http://127.0.0.1:9/health', headers: { A: 'secret' } };

function envelope(over: Partial<RunRequestEnvelope> = {}, inMs = 10_000): RunRequestEnvelope {
  const now = Date.now();
  return {
    id: newRunId(),
    tenant_id: 'ten_a',
    location: 'eu',
    created_at: new Date(now).toISOString(),
    expires_at: new Date(now + inMs).toISOString(),
    ...over,
  };
}

describe('run once now (unit)', () => {
  describe('sealed messages', () => {
    it('seals a request to its envelope: it opens as sent, and its schema holds', () => {
      const m = sealRunRequest(box, envelope(), { monitor_id: 'mon_1', settings });
      expect(validators.requestMessage(m), JSON.stringify(validators.requestMessage.errors)).to.equal(true);
      expect(m.sealed).not.to.contain('secret');
      expect(openRunRequest(box, m)).to.deep.equal({ monitor_id: 'mon_1', settings });
    });

    it('does not open a request whose envelope was altered, or with another key ring', () => {
      const m = sealRunRequest(box, envelope(), { monitor_id: 'mon_1', settings });
      const later = new Date(Date.parse(m.expires_at) + 60_000).toISOString();
      for (const altered of [
        { ...m, expires_at: later },
        { ...m, location: 'us' },
        { ...m, tenant_id: 'ten_b' },
        { ...m, capability: 'browser' as const },
        { ...m, id: newRunId() },
      ]) {
        expect(() => openRunRequest(box, altered), JSON.stringify(altered)).to.throw();
      }
      const other = new SecretBox(parseSealingKeys(newSealingKeyText('k2')));
      expect(() => openRunRequest(other, m)).to.throw();
    });

    it('seals a reply to its request id', () => {
      const r = sealRunReply(box, 'run_1', 'runner-1', {
        status: 'up',
        response_time: 3,
        status_code: 200,
        location: 'eu',
      });
      expect(validators.replyMessage(r)).to.equal(true);
      expect(openRunReply(box, r)).to.deep.equal({ status: 'up', response_time: 3, status_code: 200, location: 'eu' });
      expect(() => openRunReply(box, { ...r, id: 'run_2' })).to.throw();
    });

    it('refuses messages with fields the schemas do not have', () => {
      const m = sealRunRequest(box, envelope(), { monitor_id: 'mon_1', settings });
      expect(validators.requestMessage({ ...m, extra: 1 })).to.equal(false);
      expect(validators.requestMessage({ ...m, capability: 'gpu' })).to.equal(false);
      expect(
        validators.replyPayload({ status: 'up', response_time: 1, status_code: 200, location: 'eu', x: 1 }),
      ).to.equal(false);
    });

    it('expires a request at its expires_at (and one whose time does not parse)', () => {
      const e = envelope({}, 1000);
      const at = Date.parse(e.expires_at);
      expect(runRequestExpired(e, at - 1)).to.equal(false);
      expect(runRequestExpired(e, at)).to.equal(true);
      expect(runRequestExpired({ expires_at: 'soon' }, 0)).to.equal(true);
    });
  });

  describe('which runner acts', () => {
    it('needs Chromium for browser checks only', () => {
      expect(runCapabilityOf('browser')).to.equal('browser');
      expect(runCapabilityOf('http')).to.equal(undefined);
      expect(runnerCapabilities({ location: 'eu', chromiumPath: '/usr/bin/chromium' })).to.deep.equal(['browser']);
      expect(runnerCapabilities({ location: 'eu', chromiumPath: '' })).to.deep.equal([]);
      expect(runnerCapabilities({ location: 'eu' })).to.deep.equal([]);
    });

    it('has a group per location and capability, and acts only in the one the request names', () => {
      expect(runGroupId('g', 'eu')).to.equal('g.eu.run');
      expect(runGroupId('g', 'eu', 'browser')).to.equal('g.eu.browser.run');
      expect(actsOn({ location: 'eu' }, 'eu', undefined)).to.equal(true);
      expect(actsOn({ location: 'eu' }, 'us', undefined)).to.equal(false);
      expect(actsOn({ location: 'eu' }, 'eu', 'browser')).to.equal(false);
      expect(actsOn({ location: 'eu', capability: 'browser' }, 'eu', undefined)).to.equal(false);
      expect(actsOn({ location: 'eu', capability: 'browser' }, 'eu', 'browser')).to.equal(true);
    });
  });

  describe('the runner', () => {
    function worker(capabilities: 'browser'[] = [], maxConcurrent = 4, png?: Buffer, tooLarge = false) {
      const { factory, built } = fakeGroupConsumers();
      const probed: StoredMonitor[] = [];
      const replies: RunReplyMessage[] = [];
      let release: (() => void) | undefined;
      let hold = false;
      const w = new RunOnceWorker({
        consumers: factory,
        topic: 'requests',
        groupId: 'g',
        location: 'eu',
        capabilities,
        box,
        validators,
        probe: async (m) => {
          probed.push(m);
          if (hold) await new Promise<void>((r) => (release = r));
          const r = {
            status: 'down',
            status_code: 500,
            response_time: 12,
            error: 'unexpected_status',
            detail: 'saw 500',
          };
          return (png ? { ...r, png } : r) as SlotResult;
        },
        reply: (m) => {
          if (tooLarge && 'screenshot_png' in (openRunReply(box, m) as object)) {
            return Promise.reject(new KafkaMessageTooLargeError());
          }
          replies.push(m);
          return Promise.resolve();
        },
        runnerId: 'runner-1',
        maxBodyBytes: 1024,
        maxConcurrent,
        sessionTimeoutMs: 10_000,
        logger: silentLogger,
        registry: new Registry(),
      });
      return {
        w,
        built,
        probed,
        replies,
        hold: () => (hold = true),
        release: () => release?.(),
      };
    }
    const send = (e: RunRequestEnvelope): string =>
      JSON.stringify(sealRunRequest(box, e, { monitor_id: 'mon_1', settings }) satisfies RunRequestMessage);

    it('joins one group per capability it has, reading from the beginning', () => {
      const { built } = worker(['browser']);
      expect(built.map((c) => c.spec.groupId)).to.deep.equal(['g.eu.run', 'g.eu.browser.run']);
      expect(built.every((c) => c.spec.fromBeginning)).to.equal(true);
    });

    it("runs its location's request with the sealed settings and replies sealed", async () => {
      const { built, probed, replies } = worker();
      await built[0]!.message('requests', 0, send(envelope()));
      await until(() => replies.length === 1);
      expect(probed[0]).to.include({ id: 'mon_1', tenant_id: 'ten_a', url: settings.url });
      expect(probed[0]!.headers).to.deep.equal({ A: 'secret' });
      const payload = openRunReply(box, replies[0]!);
      expect(validators.replyPayload(payload)).to.equal(true);
      expect(payload).to.deep.equal({
        status: 'down',
        response_time: 12,
        status_code: 500,
        error: 'unexpected_status',
        detail: 'saw 500',
        location: 'eu',
      });
      expect(replies[0]!.runner).to.equal('runner-1');
    });

    it('drops expired requests, and ignores other locations, capabilities and garbage', async () => {
      const { w, built, probed } = worker(['browser']);
      await built[0]!.message('requests', 0, send(envelope({}, -1)));
      await built[0]!.message('requests', 0, send(envelope({ location: 'us' })));
      await built[0]!.message('requests', 0, send(envelope({ capability: 'browser' })));
      await built[1]!.message('requests', 0, send(envelope()));
      await built[0]!.message('requests', 0, 'not json');
      await built[0]!.message('requests', 0, JSON.stringify({ id: 'x' }));
      expect(w.inFlight()).to.equal(0);
      expect(probed).to.deep.equal([]);
      // The browser group's member runs the browser request.
      await built[1]!.message('requests', 0, send(envelope({ capability: 'browser' })));
      await until(() => probed.length === 1);
    });

    it('runs at most maxConcurrent at once: the next request waits for a slot', async () => {
      const t = worker([], 1);
      t.hold();
      await t.built[0]!.message('requests', 0, send(envelope()));
      let second = false;
      const next = t.built[0]!.message('requests', 0, send(envelope())).then(() => (second = true));
      await new Promise((r) => setTimeout(r, 30));
      expect([t.probed.length, second]).to.deep.equal([1, false]);
      t.release();
      await next;
      await until(() => t.probed.length === 2);
      t.release();
      await until(() => t.replies.length === 2);
    });

    it('replies without the screenshot when Kafka refuses the reply as too large', async () => {
      const { built, replies } = worker([], 4, Buffer.from('89504e470d0a1a0a', 'hex'), true);
      await built[0]!.message('requests', 0, send(envelope()));
      await until(() => replies.length === 1);
      const payload = openRunReply(box, replies[0]!) as Record<string, unknown>;
      expect(payload.status).to.equal('down');
      expect(payload).not.to.have.property('screenshot_png');
    });

    it('carries a screenshot PNG as base64 when the probe gives one', () => {
      const png = Buffer.from('89504e470d0a1a0a', 'hex');
      const p = replyPayload(
        { status: 'down', status_code: 0, response_time: 1, error: 'step_failed', png } as never,
        'eu',
      );
      expect(p.screenshot_png).to.equal(png.toString('base64'));
      expect(runResult(p).screenshot).to.equal(`data:image/png;base64,${png.toString('base64')}`);
    });
  });

  describe('the query service', () => {
    it('answers nulls for what the check did not find', () => {
      expect(runResult({ status: 'up', response_time: 1, status_code: 200, location: 'eu' })).to.deep.equal({
        status: 'up',
        response_time: 1,
        status_code: 200,
        error: null,
        detail: null,
        timings: null,
        tls_days_left: null,
        location: 'eu',
        screenshot: null,
      });
    });

    it("waits the monitor's timeout and a margin, at most the cap", () => {
      expect(runWaitMs({ timeout_ms: 2000 }, 70_000)).to.equal(7000);
      expect(runWaitMs({ timeout_ms: 60_000 }, 30_000)).to.equal(30_000);
    });

    it('limits runs per tenant per minute, with Retry-After', () => {
      const spend = runBudget(2);
      spend('ten_a', 0);
      spend('ten_a', 10_000);
      spend('ten_b', 10_000);
      let refused: unknown;
      try {
        spend('ten_a', 20_000);
      } catch (err) {
        refused = err;
      }
      expect(refused).to.be.instanceOf(AppError);
      expect((refused as AppError).code).to.equal('RATE_LIMITED');
      expect((refused as AppError).headers).to.deep.equal({ 'Retry-After': '40' });
      // A minute after the first, there is room again.
      spend('ten_a', 60_001);
    });
  });
});

async function until(ok: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}
