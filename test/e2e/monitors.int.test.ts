import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import {
  createValidators,
  type AlertMessage,
  type Check,
  type Incident,
  type Monitor,
  type WebhookDelivery,
} from '@telemetry/contract';
import { sqlString } from '@telemetry/platform';
import {
  adminClickHouse,
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  testStack,
  type Running,
  type Envelope,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { spawnService, type ServiceProcess } from '../support/processes.js';
import { TestTarget } from '../support/target.js';

describe('monitors, check runners and alerts (real Kafka and ClickHouse)', function () {
  this.timeout(180_000);
  let query: Running;
  let consumer: Running;
  let key: string;
  let readOnly: string;
  const target = new TestTarget();
  const hooks = new TestTarget();
  const runners: ServiceProcess[] = [];
  let alerts: Awaited<ReturnType<typeof collectTopic>>;

  const api = apiClient(
    () => query.url,
    () => key,
  );

  async function create(settings: Record<string, unknown>): Promise<Monitor> {
    const r = await api<Monitor>('POST', '/api/monitors', settings);
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    return r.body.data;
  }

  async function checks(id: string, qs = ''): Promise<Check[]> {
    const r = await api<Check[]>('GET', `/api/monitors/${id}/checks?limit=1000${qs}`);
    expect(r.status).to.equal(200);
    return r.body.data;
  }

  const runner = (id: string): Promise<ServiceProcess> =>
    spawnService('check-runner', {
      RUNNER_ID: id,
      RUNNER_SESSION_TIMEOUT_MS: '6000',
      WEBHOOK_RETRY_BASE_MS: '200',
    });

  before(async () => {
    await Promise.all([target.start(), hooks.start()]);
    [query, consumer] = await Promise.all([runQuery(), runConsumer()]);
    alerts = await collectTopic(testStack().alertsTopic);
    key = await newKey({ kind: 'api', name: 'monitors', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    readOnly = await newKey({ kind: 'api', name: 'monitors read-only', scopes: ['checks:read', 'monitors:read'] });
    await eventually('keys loaded', async () =>
      (await api('GET', '/api/monitors', undefined, { key: readOnly })).status === 200 ? true : undefined,
    );
    runners.push(...(await Promise.all([runner('runner-a'), runner('runner-b')])));
  });

  after(async () => {
    await Promise.all(runners.map((r) => r.kill('SIGTERM')));
    await Promise.all([query?.stop(), consumer?.stop(), alerts?.stop()]);
    await Promise.all([target.stop(), hooks.stop()]);
  });

  it('creates, reads, lists, changes and deletes monitors, with defaults, validation and 404s', async () => {
    const m = await create({ name: 'Registry test', url: target.url('/registry'), paused: true });
    expect(m.id).to.match(/^mon_[0-9a-f]{16}$/);
    expect(m).to.include({ method: 'GET', interval_seconds: 60, timeout_ms: 10_000, paused: true });
    expect(m.expected_status_codes).to.deep.equal(['2xx']);
    expect(m.webhook_secret).to.match(/^whsec_[0-9a-f]{32}$/);
    expect(m).to.include({ status: 'paused', last_check_at: null });

    const got = await api<Monitor>('GET', `/api/monitors/${m.id}`, undefined, { key: readOnly });
    expect(got.status).to.equal(200);
    const { webhook_secret: _secret, ...shown } = m;
    expect(got.body.data).to.deep.equal(shown);
    // The ETag is the version (for If-Match), not a cache validator: never a 304 with a stale status.
    const again = await fetch(`${query.url}/api/monitors/${m.id}`, {
      headers: { authorization: `Bearer ${readOnly}`, 'if-none-match': got.headers.get('etag') ?? '' },
    });
    expect(again.status).to.equal(200);
    expect(again.headers.get('cache-control')).to.equal('no-store');

    const second = await create({ name: 'Registry test 2', url: target.url('/registry-2'), paused: true });
    const page1 = await api<Monitor[]>('GET', '/api/monitors?limit=1');
    expect(page1.body.data).to.have.length(1);
    expect(page1.body.next_cursor).to.be.a('string');
    const all: string[] = [];
    let cursor: string | null | undefined = undefined;
    do {
      const p: { body: Envelope<Monitor[]> } = await api<Monitor[]>(
        'GET',
        `/api/monitors?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      all.push(...p.body.data.map((x) => x.id));
      cursor = p.body.next_cursor;
    } while (cursor);
    expect(all).to.include.members([m.id, second.id]);
    expect(new Set(all).size).to.equal(all.length);

    const patched = await api<Monitor>('PATCH', `/api/monitors/${m.id}`, {
      interval_seconds: 30,
      keyword: 'operational',
      expected_status_codes: [200, '3xx'],
    });
    expect(patched.status).to.equal(200);
    expect(patched.body.data).to.include({ interval_seconds: 30, keyword: 'operational', name: 'Registry test' });
    expect((await api<Monitor>('GET', `/api/monitors/${m.id}`)).body.data.keyword).to.equal('operational');
    const cleared = await api<Monitor>('PATCH', `/api/monitors/${m.id}`, { keyword: null });
    expect(cleared.body.data.keyword).to.equal(null);

    const bad: [unknown, string][] = [
      [{ name: 'x', url: 'ftp://example.com/' }, '/url'],
      [{ url: 'http://example.com/' }, ''],
      [{ name: 'x', url: 'http://example.com/', interval_seconds: 0 }, '/interval_seconds'],
      [{ name: 'x', url: 'http://example.com/', interval_seconds: 5, timeout_ms: 6000 }, '/timeout_ms'],
      [{ name: 'x', url: 'http://example.com/', method: 'GET', body: '{}' }, '/body'],
      [{ name: 'x', url: 'http://example.com/', expected_status_codes: ['6xx'] }, '/expected_status_codes/0'],
      [{ name: 'x', url: 'http://example.com/', headers: { 'bad header': 'v' } }, '/headers'],
      [{ name: 'x', url: 'http://example.com/', webhooks: ['javascript:alert(1)'] }, '/webhooks/0'],
      [{ name: 'x', url: 'http://example.com/', id: 'chosen' }, ''],
    ];
    for (const [body, path] of bad) {
      const r = await api('POST', '/api/monitors', body);
      expect([r.status, r.body.code], JSON.stringify(body)).to.deep.equal([400, 'VALIDATION_FAILED']);
      expect(
        r.body.details?.problems?.some((p) => p.path === path || path === ''),
        JSON.stringify(r.body),
      ).to.equal(true);
    }
    expect(
      (await api('POST', '/api/monitors', undefined, { raw: 'name=x', headers: { 'content-type': 'text/plain' } })).body
        .code,
    ).to.equal('UNSUPPORTED_MEDIA_TYPE');
    expect((await api('POST', '/api/monitors', undefined, { raw: '{"name":' })).body.code).to.equal('INVALID_JSON');
    expect((await api('PATCH', `/api/monitors/${m.id}`, {})).body.code).to.equal('VALIDATION_FAILED');
    const denied = await api('POST', '/api/monitors', { name: 'x', url: 'http://example.com/' }, { key: readOnly });
    expect([denied.status, denied.body.code]).to.deep.equal([403, 'INSUFFICIENT_SCOPE']);

    expect((await api('DELETE', `/api/monitors/${second.id}`)).status).to.equal(200);
    for (const path of ['', '/checks', '/checks/summary', '/checks/export', '/incidents', '/webhook-deliveries']) {
      for (const id of [second.id, 'mon_0000000000000000']) {
        const r = await fetch(`${query.url}/api/monitors/${id}${path}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect([r.status, ((await r.json()) as Envelope<null>).code], `${id}${path}`).to.deep.equal([
          404,
          'MONITOR_NOT_FOUND',
        ]);
      }
    }
    expect((await api('PATCH', `/api/monitors/${second.id}`, { paused: false })).status).to.equal(404);
    expect((await api('DELETE', `/api/monitors/${second.id}`)).status).to.equal(404);
  });

  it('checks a monitor, goes down after consecutive failures with one alert and one signed webhook, and comes back up', async () => {
    target.set('/flaky', 'ok');
    const m = await create({
      name: 'Flaky service',
      url: target.url('/flaky'),
      interval_seconds: 1,
      timeout_ms: 500,
      failure_threshold: 2,
      keyword: 'operational',
      webhooks: [hooks.url('/hook')],
    });
    // Up checks arrive through the history API.
    const ups = await eventually('2 up checks', async () => {
      const c = await checks(m.id, '&status=up');
      return c.length >= 2 ? c : undefined;
    });
    expect(ups[0]).to.include({ monitor_id: m.id, status: 'up', status_code: 200, error: null });
    expect(ups[0]!.response_time).to.be.a('number').and.to.be.at.least(0);
    const status = async (): Promise<Monitor> => (await api<Monitor>('GET', `/api/monitors/${m.id}`)).body.data;
    expect(m.status).to.equal('pending');
    expect(await status()).to.include({ status: 'up' });
    expect((await status()).last_check_at).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);

    // The service answers 500: down checks, then one alert and one webhook.
    target.set('/flaky', 'error');
    const down500 = await eventually('down checks with 500', async () => {
      const c = await checks(m.id, '&status=down');
      return c.some((x) => x.status_code === 500) ? c : undefined;
    });
    expect(down500.find((x) => x.status_code === 500)).to.include({ error: 'unexpected_status' });
    const downHook = await eventually(
      'a monitor.down webhook',
      () => hooks.requests('/hook').find((r) => r.headers['x-telemetry-event'] === 'monitor.down'),
      30_000,
    );
    const sig = String(downHook.headers['x-telemetry-signature']);
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig) ?? [];
    expect(v1).to.equal(createHmac('sha256', m.webhook_secret!).update(`${t}.${downHook.body}`).digest('hex'));
    const downAlert = JSON.parse(downHook.body) as AlertMessage;
    expect(downAlert).to.include({ type: 'monitor.down', monitor_id: m.id });
    expect(downAlert.check).to.include({ status: 'down', status_code: 500 });
    expect(downHook.headers['x-telemetry-delivery']).to.equal(downAlert.id);

    // It stops answering: still down (timeouts), and no second alert.
    target.set('/flaky', 'hang');
    await eventually('a timed-out check', async () => {
      const c = await checks(m.id, '&status=down');
      return c.some((x) => x.error === 'timeout' && x.status_code === 0) ? true : undefined;
    });
    const open = await api<Incident[]>('GET', `/api/monitors/${m.id}/incidents`);
    expect(open.body.data).to.have.length(1);
    expect(open.body.data[0]).to.include({ id: downAlert.incident_id, status: 'open', resolved_at: null });
    expect(open.body.data[0]!.cause).to.deep.equal({ status_code: 500, error: 'unexpected_status' });
    expect((await status()).status).to.equal('down');
    const listed = await api<Monitor[]>('GET', '/api/monitors?limit=1000');
    expect(listed.body.data.find((x) => x.id === m.id)?.status).to.equal('down');

    // It recovers: the up transition, with the same incident.
    target.set('/flaky', 'ok');
    const upHook = await eventually(
      'a monitor.up webhook',
      () => hooks.requests('/hook').find((r) => r.headers['x-telemetry-event'] === 'monitor.up'),
      30_000,
    );
    const upAlert = JSON.parse(upHook.body) as AlertMessage;
    expect(upAlert).to.include({ type: 'monitor.up', incident_id: downAlert.incident_id });
    const resolved = await eventually('the incident resolved', async () => {
      const r = await api<Incident[]>('GET', `/api/monitors/${m.id}/incidents?status=resolved`);
      return r.body.data.length === 1 ? r.body.data[0] : undefined;
    });
    expect(resolved.resolved_at).to.be.a('string');
    await eventually('status up again', async () => ((await status()).status === 'up' ? true : undefined));
    // Exactly one alert per transition on the topic, and one delivery of each.
    const published = (): AlertMessage[] => (alerts.values as AlertMessage[]).filter((a) => a.monitor_id === m.id);
    await eventually('both alerts read back', () => (published().length >= 2 ? true : undefined));
    expect(published().map((a) => a.type)).to.deep.equal(['monitor.down', 'monitor.up']);
    expect(hooks.requests('/hook').map((r) => r.headers['x-telemetry-event'])).to.deep.equal([
      'monitor.down',
      'monitor.up',
    ]);
  });

  it('lists every webhook delivery attempt, newest first, paged and filtered, with the URL as scheme and host', async () => {
    const v = createValidators();
    target.set('/deliveries', 'error');
    hooks.set('/retried', 'error');
    const m = await create({
      name: 'Delivery log',
      url: target.url('/deliveries'),
      interval_seconds: 1,
      timeout_ms: 500,
      failure_threshold: 1,
      webhooks: [`${hooks.url('/retried')}?token=s3cret`],
    });
    // The first attempt gets a 500; the endpoint then recovers, so a retry succeeds.
    const first = await eventually('the first delivery attempt', () => hooks.requests('/retried')[0], 30_000);
    hooks.set('/retried', 'ok');
    const alertId = String(first.headers['x-telemetry-delivery']);
    const path = `/api/monitors/${m.id}/webhook-deliveries`;
    const log = await eventually('the delivered attempt listed', async () => {
      const r = await api<WebhookDelivery[]>('GET', `${path}?alert_id=${alertId}`, undefined, { key: readOnly });
      return r.body.data[0]?.status === 'delivered' ? r.body.data : undefined;
    });
    for (const d of log) expect(v.webhookDelivery(d), JSON.stringify(v.webhookDelivery.errors)).to.equal(true);
    // Newest first: the delivery, then every 500 before it, one entry per attempt.
    const n = log.length;
    expect(n).to.be.at.least(2);
    expect(log.map((d) => d.attempt)).to.deep.equal(Array.from({ length: n }, (_, i) => n - i));
    expect(log[0]).to.include({ status: 'delivered', status_code: 200, error: null, alert_type: 'monitor.down' });
    for (const d of log.slice(1)) expect(d).to.include({ status: 'retrying', status_code: 500, error: null });
    expect(
      log.every((d) => d.monitor_id === m.id && d.alert_id === alertId && d.url === new URL(hooks.url('/')).origin),
    ).to.equal(true);
    expect(log.every((d) => d.duration_ms >= 0)).to.equal(true);
    expect(JSON.stringify(log)).not.to.include('s3cret');
    // The headers the receiver saw agree with the log.
    expect(hooks.requests('/retried').map((r) => Number(r.headers['x-telemetry-attempt']))).to.include.members(
      log.map((d) => d.attempt),
    );

    // Pages of one, following next_cursor, give the same attempts in the same order.
    const paged: WebhookDelivery[] = [];
    let cursor: string | null | undefined;
    do {
      const qs = `alert_id=${alertId}&limit=1${cursor ? `&cursor=${cursor}` : ''}`;
      const r = await api<WebhookDelivery[]>('GET', `${path}?${qs}`);
      expect(r.status).to.equal(200);
      paged.push(...r.body.data);
      cursor = r.body.next_cursor;
      if (cursor) expect(r.headers.get('link')).to.include('rel="next"');
    } while (cursor);
    expect(paged.map((d) => d.id)).to.deep.equal(log.map((d) => d.id));
    const delivered = await api<WebhookDelivery[]>('GET', `${path}?status=delivered&alert_id=${alertId}`);
    expect(delivered.body.data.map((d) => d.id)).to.deep.equal([log[0]!.id]);
    await api('PATCH', `/api/monitors/${m.id}`, { paused: true });
  });

  it('records the channel of every delivery attempt: webhook, in the API and in webhook_deliveries', async () => {
    target.set('/channel', 'error');
    const m = await create({
      name: 'Delivery channel',
      url: target.url('/channel'),
      interval_seconds: 1,
      timeout_ms: 500,
      failure_threshold: 1,
      webhooks: [hooks.url('/channel-hook')],
    });
    await eventually('the delivery', () => hooks.requests('/channel-hook')[0], 30_000);
    const path = `/api/monitors/${m.id}/webhook-deliveries`;
    const log = await eventually('a delivered attempt listed', async () => {
      const r = await api<WebhookDelivery[]>('GET', `${path}?status=delivered`);
      return r.body.data.length > 0 ? r.body.data : undefined;
    });
    await api('PATCH', `/api/monitors/${m.id}`, { paused: true });
    expect(log.map((d) => d.channel)).to.deep.equal(log.map(() => 'webhook'));
    const ch = adminClickHouse();
    try {
      const rs = await ch.query({
        query: `SELECT channel, count() AS n FROM webhook_deliveries WHERE monitor_id = ${sqlString(m.id)} GROUP BY channel`,
        format: 'JSONEachRow',
      });
      const rows = await rs.json<{ channel: string; n: string | number }>();
      expect(rows.map((r) => r.channel)).to.deep.equal(['webhook']);
      expect(Number(rows[0]!.n)).to.be.at.least(log.length);
    } finally {
      await ch.close();
    }
  });

  it('hands a down monitor over on SIGTERM without alerting again for the open incident', async () => {
    target.set('/handover', 'error');
    const m = await create({ name: 'Handover', url: target.url('/handover'), interval_seconds: 1, timeout_ms: 500 });
    const mine = (): AlertMessage[] => (alerts.values as AlertMessage[]).filter((a) => a.monitor_id === m.id);
    await eventually('the down alert', () => (mine().length === 1 ? true : undefined), 30_000);
    const owner = target.requests('/handover').at(-1)!.runner;
    const i = runners.findIndex((_, k) => ['runner-a', 'runner-b'][k] === owner);
    const stoppedAt = Date.now();
    await runners[i]!.kill('SIGTERM');
    // The other runner takes it over at once (the stopped one left the group) and checks
    // it a few times, still failing: the incident is already open, so no new alert.
    await eventually(
      'three checks by the other runner',
      () =>
        target.requests('/handover').filter((r) => r.at > stoppedAt && r.runner !== owner).length >= 3
          ? true
          : undefined,
      30_000,
    );
    expect(mine().map((a) => a.type)).to.deep.equal(['monitor.down']);
    runners[i] = await runner(owner);
    expect((await api('DELETE', `/api/monitors/${m.id}`)).status).to.equal(200);
  });

  it('splits monitors between two runners, never runs a check twice, and moves a killed runner’s monitors', async () => {
    const ms = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        create({ name: `split ${i}`, url: target.url(`/split/${i}`), interval_seconds: 1, timeout_ms: 500 }),
      ),
    );
    const paths = ms.map((_, i) => `/split/${i}`);
    const served = (since = 0): Map<string, Set<string>> => {
      const by = new Map<string, Set<string>>();
      for (const r of target.seen) {
        if (r.at < since || !paths.includes(r.path)) continue;
        by.set(r.path, (by.get(r.path) ?? new Set()).add(r.runner));
      }
      return by;
    };
    // Every monitor checked; both runners have a share.
    const owners = await eventually('every monitor checked by one runner', () => {
      const by = served();
      return by.size === ms.length ? by : undefined;
    });
    const byRunner = new Map<string, string[]>();
    for (const [path, rs] of owners) for (const r of rs) byRunner.set(r, [...(byRunner.get(r) ?? []), path]);
    expect([...byRunner.keys()].sort()).to.deep.equal(['runner-a', 'runner-b']);

    // A change reaches the owner at once: pause one monitor.
    const pausedAt = Date.now();
    expect((await api('PATCH', `/api/monitors/${ms[0]!.id}`, { paused: true })).status).to.equal(200);
    // An absence cannot be polled for: watch three intervals. A check already running
    // when the notice lands may still arrive; none may start an interval later.
    await new Promise((r) => setTimeout(r, 3000));
    const afterPause = target.requests(paths[0]!).filter((r) => r.at > pausedAt + 1500);
    expect(afterPause, 'checks after the pause').to.have.length(0);

    // Kill runner-a: runner-b takes its monitors over.
    const killedAt = Date.now();
    await runners[0]!.kill('SIGKILL');
    const moved = (byRunner.get('runner-a') ?? []).filter((p) => p !== paths[0]);
    await eventually(
      'runner-b checking runner-a’s monitors',
      () => {
        const by = served(killedAt);
        return moved.every((p) => by.get(p)?.has('runner-b')) ? true : undefined;
      },
      40_000,
    );
    const takeover = Math.min(
      ...moved.map((p) => target.requests(p).find((r) => r.at > killedAt && r.runner === 'runner-b')!.at),
    );
    process.stderr.write(
      `[monitors] runner-b took over ${moved.length} monitors ${takeover - killedAt} ms after the kill\n`,
    );

    // No check ran twice: every check id (monitor and slot) was requested once, and no
    // monitor was requested twice at the same moment (the gap allows for timer delays
    // on a loaded machine; both runners on one monitor would share its slots).
    const mine = target.seen.filter((r) => paths.includes(r.path));
    const ids = mine.map((r) => r.checkId);
    expect(ids.every((id) => /^chk_[0-9a-f]{24}$/.test(id))).to.equal(true);
    expect(new Set(ids).size, 'distinct check ids').to.equal(ids.length);
    for (const p of paths) {
      const times = target.requests(p).map((r) => r.at);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!, p).to.be.greaterThan(250);
    }
    // And the history holds them: one check per request, each from one runner.
    const m1 = ms[1]!;
    const history = await eventually('history of a moved monitor', async () => {
      const c = await checks(m1.id);
      return c.length >= target.requests(paths[1]!).length - 2 ? c : undefined;
    });
    expect(new Set(history.map((c) => c.id)).size).to.equal(history.length);
  });
});
