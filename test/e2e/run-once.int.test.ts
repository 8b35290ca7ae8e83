import { expect } from 'chai';
import type { AuditEntry, Monitor, RunOnceResult } from '@telemetry/contract';
import { createTenant, issueKey } from '@telemetry/store';
import {
  adminRegistry,
  collectTopic,
  eventually,
  runQuery,
  runRunner,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient, type ApiAnswer } from '../support/api.js';
import { TestTarget } from '../support/target.js';

/**
 * "Run once now" (docs/monitors.md, "Run once now") on the real stack: the query service
 * asks a check runner through Kafka (sealed request and reply topics) and answers what the
 * check found, storing nothing; a location no runner serves answers 504 RUN_TIMEOUT.
 */
describe('run once now (query service, check runner, Kafka)', function () {
  this.timeout(120_000);
  const target = new TestTarget();
  let query: Running;
  /** A second replica with a budget of one run a minute. */
  let stingy: Running;
  let runner: Running;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let audit: Awaited<ReturnType<typeof collectTopic>>;
  const tenants = { a: '', b: '' };
  const keys = { a: '', b: '' };
  const LOCATION = uid('loc')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 20);
  /** The cap of the wait: short, so that a run no runner takes ends soon. */
  const CAP_MS = 4000;

  const api = apiClient(
    () => query.url,
    () => keys.a,
  );
  const runOnce = (body: unknown, o: { key?: string } = {}): Promise<ApiAnswer<RunOnceResult>> =>
    api<RunOnceResult>('POST', '/api/monitors/run-once', body, o);
  const paths = (r: ApiAnswer<unknown>): string[] => (r.body.details?.problems ?? []).map((p) => p.path);
  const http = (path: string, extra: Record<string, unknown> = {}) => ({
    type: 'http',
    url: target.url(path),
    locations: [LOCATION],
    timeout_ms: 2000,
    ...extra,
  });

  before(async () => {
    await target.start();
    target.set('/up', 'ok');
    target.set('/down', 'error');
    tenants.a = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    tenants.b = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const scopes = ['monitors:read', 'monitors:write', 'checks:read'];
    keys.a = (await issueKey(adminRegistry(), { tenantId: tenants.a, kind: 'api', name: 'run', scopes })).key;
    keys.b = (await issueKey(adminRegistry(), { tenantId: tenants.b, kind: 'api', name: 'run', scopes })).key;
    checks = await collectTopic(testStack().checksTopic);
    audit = await collectTopic(testStack().auditTopic);
    [query, stingy, runner] = await Promise.all([
      runQuery({ RUN_ONCE_TIMEOUT_MS: String(CAP_MS), RUN_ONCE_PER_MINUTE: '1000' }),
      runQuery({ RUN_ONCE_TIMEOUT_MS: String(CAP_MS), RUN_ONCE_PER_MINUTE: '1' }),
      runRunner({ RUNNER_LOCATION: LOCATION, RUNNER_GROUP_ID: uid('run-once-runners'), WEBHOOK_GROUP_ID: uid('wh') }),
    ]);
    // The runner's request group has joined once a run is answered.
    await eventually(
      'a runner answering run-once',
      async () => ((await runOnce({ settings: http('/up') })).status === 200 ? true : undefined),
      60_000,
    );
  });

  after(async () => {
    await Promise.all([runner?.stop(), query?.stop(), stingy?.stop(), checks?.stop(), audit?.stop()]);
    await target.stop();
  });

  it('runs an http check with unsaved settings and stores nothing', async () => {
    const before = target.requests('/up').length;
    const r = await runOnce({ settings: { ...http('/up'), name: 'not saved', headers: { 'X-Probe': 'plain' } } });
    expect(r.status, r.text).to.equal(200);
    expect(r.headers.get('cache-control')).to.equal('no-store');
    expect(r.body.data).to.include({
      status: 'up',
      status_code: 200,
      error: null,
      location: LOCATION,
      screenshot: null,
    });
    expect(r.body.data.response_time).to.be.a('number');
    const seen = target.requests('/up').slice(before);
    expect(seen).to.have.length(1);
    expect(seen[0]!.headers['x-probe']).to.equal('plain');
    expect(seen[0]!.headers['user-agent']).to.contain('run-once');
    // No monitor was made, and no check of the tenant was published (so none reaches ClickHouse).
    const list = await api<Monitor[]>('GET', '/api/monitors');
    expect(list.body.data).to.deep.equal([]);
    expect((checks.values as { tenant_id?: string }[]).filter((c) => c.tenant_id === tenants.a)).to.deep.equal([]);
    // Audited, with the URL as the API shows it.
    const entry = await eventually('the run audited', () =>
      (audit.values as AuditEntry[]).find((e) => e.tenant_id === tenants.a && e.action === 'monitor.run_once'),
    );
    expect(entry.outcome).to.equal('ok');
    expect(entry.changes.status).to.deep.equal({ after: 'up' });
  });

  it('answers a failing check as down with its error', async () => {
    const r = await runOnce({ settings: http('/down') });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.data.status).to.equal('down');
    expect(r.body.data.status_code).to.equal(500);
    expect(r.body.data.error).to.be.a('string');
  });

  it('runs a stored monitor with the form applied over it: a masked header sends the stored value', async () => {
    const made = await api<Monitor>('POST', '/api/monitors', {
      name: uid('stored'),
      ...http('/up'),
      paused: true,
      headers: { Authorization: 'Bearer stored-secret', 'X-Other': 'old' },
    });
    expect(made.status, made.text).to.equal(201);
    const shown = made.body.data.headers;
    expect(shown.Authorization).to.equal('****');
    const before = target.requests('/up').length;
    const r = await runOnce({
      monitor_id: made.body.data.id,
      settings: { headers: { Authorization: '****', 'X-Other': 'new' }, timeout_ms: 1500 },
    });
    expect(r.status, r.text).to.equal(200);
    expect(r.body.data.status).to.equal('up');
    const seen = target.requests('/up').slice(before);
    expect(seen).to.have.length(1);
    expect(seen[0]!.headers.authorization).to.equal('Bearer stored-secret');
    expect(seen[0]!.headers['x-other']).to.equal('new');
    // The stored monitor did not change.
    const after = await api<Monitor>('GET', `/api/monitors/${made.body.data.id}`);
    expect(after.body.data.headers['X-Other']).to.equal('****');
    expect(after.body.data.timeout_ms).to.equal(2000);
  });

  it("refuses another tenant's monitor as unknown", async () => {
    const made = await api<Monitor>('POST', '/api/monitors', { name: uid('mine'), ...http('/up'), paused: true });
    const r = await runOnce({ monitor_id: made.body.data.id, settings: {} }, { key: keys.b });
    expect([r.status, r.code]).to.deep.equal([404, 'MONITOR_NOT_FOUND']);
  });

  it('validates the settings as POST /api/monitors does, with the same paths', async () => {
    const cases: [unknown, number, string, string][] = [
      [{ settings: { ...http('/up'), timeout_ms: 'soon' } }, 400, 'VALIDATION_FAILED', '/timeout_ms'],
      [{ settings: { ...http('/up'), keyword_typo: 'x' } }, 400, 'VALIDATION_FAILED', '/keyword_typo'],
      [{ settings: { type: 'http' } }, 400, 'VALIDATION_FAILED', '/url'],
      [{ settings: { ...http('/up'), type: 'tcp' } }, 400, 'VALIDATION_FAILED', '/url'],
      [{ settings: { ...http('/up'), timeout_ms: 900_000 } }, 400, 'VALIDATION_FAILED', '/timeout_ms'],
      [{ settings: http('/up'), extra: 1 }, 400, 'VALIDATION_FAILED', '/extra'],
      [{}, 400, 'VALIDATION_FAILED', '/settings'],
      [{ settings: { ...http('/up'), url: 'http://10.0.0.1/' } }, 400, 'TARGET_NOT_ALLOWED', '/url'],
    ];
    for (const [body, status, code, path] of cases) {
      const r = await runOnce(body);
      expect([r.status, r.code], JSON.stringify(body)).to.deep.equal([status, code]);
      expect(paths(r), JSON.stringify(body)).to.include(path);
    }
  });

  it('answers 504 RUN_TIMEOUT when no runner of the location answers in time', async () => {
    const started = Date.now();
    const r = await runOnce({ settings: { ...http('/up'), locations: ['no-runner-here'] } });
    const took = Date.now() - started;
    expect([r.status, r.code], r.text).to.deep.equal([504, 'RUN_TIMEOUT']);
    expect(took).to.be.at.least(CAP_MS - 100);
    expect(took).to.be.below(CAP_MS + 3000);
  });

  it('never gives a browser check to a runner without Chromium: 504 RUN_TIMEOUT, the page never opened', async () => {
    const before = target.requests('/page').length;
    const started = Date.now();
    const r = await runOnce({
      settings: {
        type: 'browser',
        url: target.url('/page'),
        locations: [LOCATION],
        timeout_ms: 2000,
        browser_steps: [{ action: 'assert_text', text: 'Welcome' }],
      },
    });
    expect([r.status, r.code], r.text).to.deep.equal([504, 'RUN_TIMEOUT']);
    expect(r.text).to.contain('browser');
    expect(Date.now() - started).to.be.below(CAP_MS + 3000);
    expect(target.requests('/page').length).to.equal(before);
  });

  it('limits runs per tenant with 429 RATE_LIMITED and Retry-After', async () => {
    const first = await runOnce({ settings: http('/up') }, {});
    expect(first.status).to.equal(200);
    const viaStingy = apiClient(
      () => stingy.url,
      () => keys.a,
    );
    await eventually('the key loaded on the second replica', async () =>
      (await viaStingy('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
    const one = await viaStingy<RunOnceResult>('POST', '/api/monitors/run-once', { settings: http('/up') });
    expect(one.status, one.text).to.equal(200);
    const two = await viaStingy<RunOnceResult>('POST', '/api/monitors/run-once', { settings: http('/up') });
    expect([two.status, two.code]).to.deep.equal([429, 'RATE_LIMITED']);
    expect(Number(two.headers.get('retry-after'))).to.be.within(1, 60);
  });
});
