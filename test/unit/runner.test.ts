import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import {
  alertIdFor,
  checkIdFor,
  decide,
  INITIAL_STATE,
  judge,
  nextSlot,
  phaseOf,
  probeMap,
  probeWith,
  stateFromLastAlert,
  statusExpected,
  type AlertState,
} from '@telemetry/check-runner';
import { createValidators, describeErrors, type CheckStatus, type MonitorSettings } from '@telemetry/contract';
import { classify, EgressPolicy, httpCall, StreamSearch } from '@telemetry/platform';
import { retriable, signature } from '@telemetry/alerting';
import type { ProbeContext, ProbeResult } from '../../services/check-runner/src/probes/index.js';
import {
  createSettings,
  DEFAULT_MONITOR,
  deniedTargets,
  maskWebhookUrl,
  monitorPartition,
  monitorProblems,
  monitorStatus,
  patchSettings,
  publicMonitor,
  placeholderMonitor,
} from '@telemetry/store';

const settings = (over: Partial<MonitorSettings> = {}): MonitorSettings => ({
  ...DEFAULT_MONITOR,
  name: 'm',
  url: 'http://127.0.0.1:1/',
  ...over,
});

/** Runs a check of `m` through the runner's probe map, as the scheduler does (no heartbeat monitors here). */
const runProbe = probeWith(
  probeMap({ lastCall: () => Promise.resolve(undefined), settleMs: 0, now: () => Date.now() }),
);
async function probe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  const stored = {
    ...m,
    id: 'mon_x',
    tenant_id: 'ten_x',
    key: null,
    webhook_secret: '',
    version: 1,
    created_at: '',
    updated_at: '',
  };
  const r = await runProbe(stored, ctx);
  if ('pending' in r) throw new Error('a network probe is never pending');
  return r;
}

/** Runs statuses through decide() and returns the transitions, in order. */
function run(
  statuses: CheckStatus[],
  thresholds = { failure_threshold: 2, recovery_threshold: 1 },
  from = INITIAL_STATE,
) {
  let s: AlertState = from;
  const out: string[] = [];
  statuses.forEach((status, i) => {
    const r = decide(s, { id: `c${i}`, status }, thresholds);
    if (r.transition) out.push(`${r.transition.type}@${i}:${r.transition.incidentId}`);
    s = r.next;
  });
  return { out, state: s };
}

describe('check runner (unit)', () => {
  describe('alert state machine', () => {
    it('goes down after failure_threshold consecutive failures, once, and up after recovery_threshold passes', () => {
      expect(run(['up', 'down', 'up', 'down', 'down', 'down', 'down', 'up']).out).to.deep.equal([
        'monitor.down@4:c3',
        'monitor.up@7:c3',
      ]);
      expect(
        run(['down', 'down', 'up', 'down', 'up', 'up'], { failure_threshold: 2, recovery_threshold: 2 }).out,
      ).to.deep.equal(['monitor.down@1:c0', 'monitor.up@5:c0']);
    });

    it('counts degraded as passing and says nothing when a new monitor first comes up', () => {
      expect(run(['up', 'degraded', 'up']).out).to.deep.equal([]);
      expect(run(['down', 'degraded', 'down']).out).to.deep.equal([]);
      expect(run(['down'], { failure_threshold: 1, recovery_threshold: 1 }).out).to.deep.equal(['monitor.down@0:c0']);
    });

    it('resumes from the last alert after a takeover: no second down while still down', () => {
      const down = stateFromLastAlert({ type: 'monitor.down', incident_id: 'inc' });
      expect(run(['down', 'down', 'down'], undefined, down).out).to.deep.equal([]);
      expect(run(['down', 'up'], undefined, down).out).to.deep.equal(['monitor.up@1:inc']);
      expect(stateFromLastAlert({ type: 'monitor.up', incident_id: 'inc' }).state).to.equal('up');
      expect(stateFromLastAlert(undefined)).to.deep.equal(INITIAL_STATE);
    });
  });

  describe('schedule', () => {
    it('puts every check on a per-monitor grid that every runner computes alike', () => {
      const now = Date.UTC(2026, 10, 22, 10, 0, 0, 123);
      for (const interval of [1, 10, 60, 3600]) {
        const slot = nextSlot('mon_a', interval, now);
        expect(slot).to.be.greaterThan(now);
        expect(slot - now).to.be.at.most(interval * 1000);
        expect((slot - phaseOf('mon_a', interval * 1000)) % (interval * 1000)).to.equal(0);
        // The next slot from the slot itself is one interval later: no slot twice.
        expect(nextSlot('mon_a', interval, slot)).to.equal(slot + interval * 1000);
      }
      const phases = new Set(Array.from({ length: 50 }, (_, i) => phaseOf(`mon_${i}`, 60_000)));
      expect(phases.size, 'monitors are spread over the interval').to.be.greaterThan(40);
    });

    it('derives check, alert and partition ids deterministically', () => {
      expect(checkIdFor('mon_a', 1000))
        .to.equal(checkIdFor('mon_a', 1000))
        .and.match(/^chk_[0-9a-f]{24}$/);
      expect(checkIdFor('mon_a', 1000)).to.not.equal(checkIdFor('mon_a', 2000));
      expect(checkIdFor('mon_a', 1000)).to.not.equal(checkIdFor('mon_b', 1000));
      const t = { type: 'monitor.down' as const, incidentId: 'chk_1' };
      expect(alertIdFor('m', t))
        .to.equal(alertIdFor('m', t))
        .and.not.equal(alertIdFor('m', { ...t, type: 'monitor.up' }));
      for (const id of ['a', 'mon_1', 'x'.repeat(128)]) {
        const p = monitorPartition(id, 12);
        expect(p).to.be.within(0, 11);
        expect(monitorPartition(id, 12)).to.equal(p);
      }
    });
  });

  describe('verdicts', () => {
    const answer = (statusCode: number, keywordFound?: boolean, truncated = false) => ({
      statusCode,
      headers: {},
      body: Buffer.alloc(0),
      truncated,
      keywordFound,
    });

    it('matches expected status codes and classes', () => {
      expect(statusExpected(200, ['2xx'])).to.equal(true);
      expect(statusExpected(204, [200])).to.equal(false);
      expect(statusExpected(301, [200, '3xx'])).to.equal(true);
      expect(statusExpected(500, ['2xx', '3xx', 404])).to.equal(false);
    });

    it('judges status, keyword and slowness', () => {
      expect(judge(settings(), answer(200), 10)).to.deep.equal({ status: 'up', status_code: 200, response_time: 10 });
      expect(judge(settings(), answer(503), 10)).to.include({ status: 'down', error: 'unexpected_status' });
      expect(judge(settings({ keyword: 'healthy' }), answer(200, true), 5).status).to.equal('up');
      expect(judge(settings({ keyword: 'healthy' }), answer(200, false), 5)).to.include({ error: 'keyword_missing' });
      expect(judge(settings({ keyword: 'healthy' }), answer(200, false, true), 5)).to.include({
        error: 'body_too_large',
      });
      expect(judge(settings({ degraded_threshold_ms: 100 }), answer(200), 150).status).to.equal('degraded');
      expect(judge(settings({ degraded_threshold_ms: 100 }), answer(200), 50).status).to.equal('up');
    });

    it('finds a keyword across chunk boundaries while holding no more than the keyword', () => {
      const chunks = (text: string, size: number): Buffer[] => {
        const b = Buffer.from(text, 'utf8');
        return Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size));
      };
      for (const size of [1, 2, 3, 5, 64]) {
        const hit = new StreamSearch('nëedle');
        for (const c of chunks(`${'x'.repeat(100)}nëedle${'y'.repeat(10)}`, size)) hit.push(c);
        expect(hit.found, `chunks of ${size}`).to.equal(true);
        const miss = new StreamSearch('nëedle');
        for (const c of chunks(`${'x'.repeat(100)}nëedl${'y'.repeat(10)}`, size)) miss.push(c);
        expect(miss.found, `chunks of ${size}`).to.equal(false);
        expect((miss as unknown as { tail: Buffer }).tail.length).to.be.below(Buffer.byteLength('nëedle'));
      }
    });

    it('names network failures', () => {
      expect(classify(new Error('x'), true)).to.equal('timeout');
      expect(classify(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), false)).to.equal('connection_refused');
      expect(classify(Object.assign(new Error('x'), { code: 'ENOTFOUND' }), false)).to.equal('dns');
      expect(classify(Object.assign(new Error('x'), { code: 'ECONNRESET' }), false)).to.equal('connection_reset');
      expect(classify(Object.assign(new Error('x'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }), false)).to.equal('tls');
      expect(classify(new Error('x'), false)).to.equal('network');
    });
  });

  describe('probes over real sockets', () => {
    let server: Server;
    let base: string;
    before(async () => {
      server = createServer((req, res) => {
        if (req.url === '/redirect') return res.writeHead(302, { location: '/ok' }).end();
        if (req.url === '/loop') return res.writeHead(302, { location: '/loop' }).end();
        if (req.url === '/slow') return; // never answers
        if (req.url === '/big') return res.end('x'.repeat(200_000) + 'needle');
        if (req.url === '/echo') {
          let body = '';
          req.on('data', (c: Buffer) => (body += c.toString()));
          req.on('end', () => res.end(JSON.stringify({ method: req.method, body, h: req.headers['x-custom'] })));
          return;
        }
        res.end('service ok');
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });

    // The test server listens on loopback, which only an explicit allow opens.
    const policy = new EgressPolicy({ allow: ['127.0.0.1/32'] });
    const ctx = { userAgent: 'test', checkId: 'chk_x', monitorId: 'mon_x', maxBodyBytes: 100_000, policy };

    it('follows redirects only when asked, and stops at a loop', async () => {
      expect((await probe(settings({ url: `${base}/redirect`, keyword: 'ok' }), ctx)).status).to.equal('up');
      expect(await probe(settings({ url: `${base}/redirect`, follow_redirects: false }), ctx)).to.include({
        status: 'down',
        status_code: 302,
        error: 'unexpected_status',
      });
      expect(await probe(settings({ url: `${base}/loop` }), ctx)).to.include({ status: 'down', status_code: 302 });
    });

    it('checks a stored URL whose host does not parse as down dns, of every type, without throwing', async () => {
      for (const m of [
        settings({ url: 'http://1.2.3.4.5/' }),
        settings({ type: 'tcp', url: 'tcp://1.2.3.4.5:80' }),
        settings({ type: 'tls', url: 'tls://256.1.1.1:443' }),
      ]) {
        expect(await probe(m, ctx), m.url).to.include({ status: 'down', status_code: 0, error: 'dns' });
      }
    });

    it('records timeouts and refused connections as down with status code 0', async () => {
      const t = await probe(settings({ url: `${base}/slow`, timeout_ms: 200 }), ctx);
      expect(t).to.include({ status: 'down', status_code: 0, error: 'timeout' });
      expect(t.response_time).to.be.within(190, 2000);
      expect(await probe(settings({ url: 'http://127.0.0.1:1/' }), ctx)).to.include({
        status: 'down',
        status_code: 0,
        error: 'connection_refused',
      });
    });

    it('sends the method, body and headers, and reads at most maxBodyBytes', async () => {
      const r = await httpCall({
        url: `${base}/echo`,
        method: 'POST',
        headers: { 'x-custom': 'v' },
        body: '{"a":1}',
        timeoutMs: 2000,
        maxRedirects: 0,
        maxBodyBytes: 1000,
        keepBytes: 1000,
        policy,
      });
      expect(JSON.parse(r.body.toString())).to.deep.equal({ method: 'POST', body: '{"a":1}', h: 'v' });
      const big = await probe(settings({ url: `${base}/big`, keyword: 'needle' }), ctx);
      expect(big).to.include({ status: 'down', error: 'body_too_large' });
    });
  });

  describe('webhooks', () => {
    it('signs t.body with HMAC-SHA256 of the secret', () => {
      const sig = signature('whsec_test', '{"a":1}', 1_700_000_000);
      const mac = createHmac('sha256', 'whsec_test').update('1700000000.{"a":1}').digest('hex');
      expect(sig).to.equal(`t=1700000000,v1=${mac}`);
    });

    it('retries timeouts, throttling and server errors only', () => {
      expect([408, 429, 500, 503].every(retriable)).to.equal(true);
      expect([400, 401, 404, 410].some(retriable)).to.equal(false);
    });

    it('never logs a webhook URL’s path, query string or credentials', () => {
      expect(maskWebhookUrl('https://user:pw@hooks.example.com/p/x?token=secret')).to.equal(
        'https://hooks.example.com',
      );
    });
  });

  describe('registry rules', () => {
    it('fills defaults, applies patches, and states the cross-field rules', () => {
      const s = createSettings({ name: 'n', url: 'https://example.com/' }, 'mon_00000000000000a1');
      expect(s).to.include({ method: 'GET', interval_seconds: 60, failure_threshold: 2, paused: false });
      expect(
        patchSettings({ ...s, id: 'mon_00000000000000a1' }, { keyword: 'x', webhook_secret: 'ignored-here-1234' }),
      ).to.include({ keyword: 'x' });
      expect(monitorProblems(s)).to.deep.equal([]);
      // An unset timeout fits a short interval; a given one is checked as given.
      expect(
        createSettings({ name: 'n', url: 'https://example.com/', interval_seconds: 5 }, 'mon_00000000000000a1')
          .timeout_ms,
      ).to.equal(5000);
      expect(
        monitorProblems(
          createSettings(
            { name: 'n', url: 'https://example.com/', interval_seconds: 5, timeout_ms: 6000 },
            'mon_00000000000000a1',
          ),
        ),
      ).to.have.length(1);
      expect(
        monitorProblems(patchSettings({ ...s, id: 'mon_00000000000000a1' }, { interval_seconds: 2 })),
      ).to.have.length(1);
      expect(monitorProblems({ ...s, interval_seconds: 1, timeout_ms: 2000 }).map((p) => p.path)).to.deep.equal([
        '/timeout_ms',
      ]);
      expect(monitorProblems({ ...s, degraded_threshold_ms: 20_000 }).map((p) => p.path)).to.deep.equal([
        '/degraded_threshold_ms',
      ]);
      expect(monitorProblems({ ...s, body: '{}' }).map((p) => p.path)).to.deep.equal(['/body']);
    });

    it('accepts only header values HTTP can carry', () => {
      const v = createValidators();
      const ok = (value: string): boolean =>
        v.monitorCreate({ name: 'n', url: 'https://example.com/', headers: { 'X-Token': value } });
      expect(['Bearer abc', 'café', 'a\tb', ''].every(ok)).to.equal(true);
      expect(['日本', 'x\r\ny', 'x\ny', 'x\u0000'].some(ok)).to.equal(false);
    });

    it('refuses URLs whose host the WHATWG parser refuses, as a problem of the field, never a throw', () => {
      const v = createValidators();
      const problemsOf = (body: object): string[] =>
        v.monitorCreate(body) ? [] : describeErrors(v.monitorCreate.errors).map((p) => p.path);
      const bad: [object, string][] = [
        [{ url: 'http://1.2.3.4.5/' }, '/url'],
        [{ url: 'https://256.1.1.1/x' }, '/url'],
        [{ type: 'tcp', url: 'tcp://1.2.3.4.5:80' }, '/url'],
        [{ type: 'tls', url: 'tls://256.1.1.1' }, '/url'],
        [{ type: 'dns', url: 'dns://1.2.3.4.5' }, '/url'],
        [{ url: 'https://example.com/', webhooks: ['http://1.2.3.4.5/hook'] }, '/webhooks/0'],
      ];
      for (const [body, path] of bad) {
        expect(problemsOf({ name: 'n', ...body }), JSON.stringify(body)).to.include(path);
        expect(v.monitorPatch(body), JSON.stringify(body)).to.equal(false);
      }
      for (const url of ['https://example.com/', 'http://1.2.3.4/', 'https://[::1]:8443/a']) {
        expect(problemsOf({ name: 'n', url }), url).to.deep.equal([]);
      }
      expect(problemsOf({ name: 'n', type: 'tcp', url: 'tcp://db.example:5432' })).to.deep.equal([]);
      // A monitor stored before the check, patched now: a problem, and nothing that throws.
      const stored = settings({ url: 'http://1.2.3.4.5/', webhooks: ['http://1.2.3.4.5/hook'] });
      expect(monitorProblems(stored).map((p) => p.path)).to.have.members(['/url', '/webhooks/0']);
      expect(deniedTargets(stored, new EgressPolicy())).to.deep.equal([]);
    });

    it('derives a monitor’s status from pause, open incident and checks', () => {
      expect(monitorStatus({ paused: true }, { lastAlert: 'monitor.down', lastCheckAt: 'x' })).to.equal('paused');
      expect(monitorStatus({ paused: false }, { lastAlert: 'monitor.down', lastCheckAt: 'x' })).to.equal('down');
      expect(monitorStatus({ paused: false }, { lastAlert: 'monitor.up', lastCheckAt: 'x' })).to.equal('up');
      expect(monitorStatus({ paused: false }, { lastCheckAt: 'x' })).to.equal('up');
      expect(monitorStatus({ paused: false }, {})).to.equal('pending');
    });

    it('shows the webhook secret only when asked', () => {
      const m = { ...placeholderMonitor('mon_x'), version: 1 };
      expect(publicMonitor(m)).to.not.have.property('webhook_secret');
      expect(publicMonitor(m, {}, true)).to.have.property('webhook_secret', m.webhook_secret);
      expect(publicMonitor(m)).to.not.have.property('version');
    });
  });
});
