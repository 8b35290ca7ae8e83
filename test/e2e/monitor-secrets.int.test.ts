import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { DEFAULT_TENANT, type AlertMessage, type Monitor, type WebhookDelivery } from '@telemetry/contract';
import { sqlIdentifier, sqlStringList } from '@telemetry/platform';
import {
  DEFAULT_MONITOR,
  databasesOf,
  MonitorStore,
  newMonitorId,
  newWebhookSecret,
  quoteIdent,
} from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import {
  adminClickHouse,
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runQuery,
  testStack,
  uid,
  type Running,
  adminRegistry,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { spawnService, type ServiceProcess } from '../support/processes.js';
import { TestTarget } from '../support/target.js';

/**
 * A monitor's credentials (issue 36, items 2 and 3) with a real check runner on the real
 * pipeline: a PATCH that moves the URL to another origin (another loopback port) leaves
 * the stored header values and URL credentials behind; a token in a URL's user name,
 * query or a webhook's path reaches the runner's requests but no answer, alert, webhook
 * body, delivery record, log line or table in plain text.
 */
describe('monitor credentials: a moved URL, tokens inside URLs (real Kafka and ClickHouse)', function () {
  this.timeout(180_000);
  let query: Running;
  let consumer: Running;
  let runner: ServiceProcess;
  let key: string;
  let alerts: Awaited<ReturnType<typeof collectTopic>>;
  let ch: ReturnType<typeof adminClickHouse>;
  const target = new TestTarget();
  const elsewhere = new TestTarget();
  const hooks = new TestTarget();

  const token = (prefix: string): string => `${prefix}${randomBytes(8).toString('hex')}`;

  const api = apiClient(
    () => query.url,
    () => key,
  );

  /** Every table of the run's three ClickHouse databases and of its registry (PostgreSQL), as text. */
  async function everyTable(): Promise<Map<string, string>> {
    const databases = Object.values(databasesOf(testStack().database));
    const tables = await (
      await ch.query({
        query: `SELECT database, name FROM system.tables
          WHERE database IN ${sqlStringList(databases)} AND engine NOT LIKE '%View%'`,
        format: 'JSONEachRow',
      })
    ).json<{ database: string; name: string }>();
    const out = new Map<string, string>();
    for (const { database, name } of tables) {
      const rs = await ch.query({
        query: `SELECT * FROM ${sqlIdentifier(database)}.${sqlIdentifier(name)}`,
        format: 'TabSeparated',
      });
      out.set(`${database}.${name}`, await rs.text());
    }
    const registry = adminRegistry();
    const { rows: pgTables } = await registry.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`,
    );
    expect(pgTables.map((t) => t.name)).to.include('monitors');
    for (const { name } of pgTables) {
      const { rows } = await registry.query<{ row: string }>(`SELECT t::text AS row FROM ${quoteIdent(name)} t`);
      out.set(`registry.${name}`, rows.map((r) => r.row).join('\n'));
    }
    return out;
  }

  before(async () => {
    ch = adminClickHouse();
    await Promise.all([target.start(), elsewhere.start(), hooks.start()]);
    [query, consumer] = await Promise.all([runQuery(), runConsumer()]);
    alerts = await collectTopic(testStack().alertsTopic);
    key = await newKey({
      kind: 'api',
      name: 'credentials',
      scopes: ['checks:read', 'monitors:read', 'monitors:write'],
    });
    await eventually('key loaded', async () => ((await api('GET', '/api/monitors')).status === 200 ? true : undefined));
    // info: the runner's log lines about deliveries are read below.
    // Groups of its own: a runner of another run on the same Kafka would otherwise share
    // the default groups and be handed some of this run's partitions.
    runner = await spawnService('check-runner', {
      RUNNER_ID: 'runner-creds',
      RUNNER_GROUP_ID: uid('creds-runners'),
      WEBHOOK_GROUP_ID: uid('creds-webhooks'),
      WEBHOOK_RETRY_BASE_MS: '200',
      LOG_LEVEL: 'info',
    });
  });

  after(async () => {
    await runner?.kill('SIGTERM');
    await Promise.all([query?.stop(), consumer?.stop(), alerts?.stop()]);
    await Promise.all([target.stop(), elsewhere.stop(), hooks.stop()]);
    await ch?.close();
  });

  it('sends the stored header values and URL credentials to no other origin after a PATCH moves the URL, and names what it dropped', async () => {
    const apiKey = token('hdr');
    const [user, pass, query_] = [token('usr'), token('pw'), token('qt')];
    const basic = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
    const url = `${target.url('/origin').replace('http://', `http://${user}:${pass}@`)}?token=${query_}`;
    const created = await api<Monitor>('POST', '/api/monitors', {
      name: 'Moving monitor',
      url,
      headers: { 'X-Api-Key': apiKey },
      interval_seconds: 1,
      timeout_ms: 500,
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.data.id;
    const first = await eventually('a check with the credentials', () => target.requests('/origin')[0]);
    expect(first.url).to.equal(`/origin?token=${query_}`);
    expect(first.headers).to.include({ 'x-api-key': apiKey, authorization: basic });

    // Another path on the same origin: the secrets stay (a masked query value is the stored one).
    const samePath = await api<Monitor>('PATCH', `/api/monitors/${id}`, {
      url: `${target.url('/origin-2')}?token=****`,
    });
    expect(samePath.status, samePath.text).to.equal(200);
    expect(samePath.body.data.dropped_secrets).to.deep.equal([]);
    expect(samePath.body.data.url).to.equal(`${target.url('/origin-2')}?token=****`);
    expect(samePath.body.data.headers).to.deep.equal({ 'X-Api-Key': '****' });
    const kept = await eventually('a check of the new path', () => target.requests('/origin-2')[0]);
    expect(kept.url).to.equal(`/origin-2?token=${query_}`);
    expect(kept.headers).to.include({ 'x-api-key': apiKey, authorization: basic });

    // Another origin (another port): nothing stored follows the URL there.
    const moved = await api<Monitor>('PATCH', `/api/monitors/${id}`, { url: `${elsewhere.url('/moved')}?token=****` });
    expect(moved.status, moved.text).to.equal(200);
    const there = await eventually('three checks at the new origin', () =>
      elsewhere.requests('/moved').length >= 3 ? elsewhere.requests('/moved') : undefined,
    );
    for (const r of there) {
      expect(r.headers['x-api-key'], 'the stored header at the new origin').to.equal(undefined);
      expect(r.headers.authorization, 'the stored userinfo at the new origin').to.equal(undefined);
      expect(r.url, 'the stored query value at the new origin').to.equal('/moved');
    }
    expect([...moved.body.data.dropped_secrets!].sort()).to.deep.equal([
      'headers.X-Api-Key',
      'url.query.token',
      'url.userinfo',
    ]);
    expect(moved.body.data).to.include({ url: elsewhere.url('/moved') });
    expect(moved.body.data.headers).to.deep.equal({});
    const logged = query.logs.lines.filter((l) => l.includes('monitor secrets dropped'));
    expect(logged.some((l) => l.includes(id) && l.includes('url.userinfo'))).to.equal(true);
    for (const secret of [apiKey, user, pass, query_]) {
      expect(query.logs.lines.join('\n'), 'query service logs').not.to.include(secret);
      expect(elsewhere.seen.map((r) => JSON.stringify(r)).join(), 'the new origin').not.to.include(secret);
    }
    await api('PATCH', `/api/monitors/${id}`, { paused: true });
  });

  it('checks and delivers to the real URLs, yet shows no token of a URL’s user name, query or a webhook’s path anywhere', async () => {
    const [user, query_, hookPath_, hookQuery] = [token('ut'), token('qt'), token('pt'), token('hq')];
    const secrets = [user, query_, hookPath_, hookQuery];
    target.set('/leaky', 'error');
    const url = `${target.url('/leaky').replace('http://', `http://${user}@`)}?key=${query_}&plain=`;
    const hookPath = `/services/T000/${hookPath_}`;
    const created = await api<Monitor>('POST', '/api/monitors', {
      name: 'Tokens in URLs',
      url,
      interval_seconds: 1,
      timeout_ms: 500,
      failure_threshold: 1,
      webhooks: [`${hooks.url(hookPath)}?token=${hookQuery}`],
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.data.id;
    const shownUrl = `${target.url('/leaky')}?key=****&plain=`;
    const shownHook = new URL(hooks.url('/')).origin;
    expect(created.body.data.url).to.equal(shownUrl);
    expect(created.body.data.webhooks).to.deep.equal([shownHook]);

    // The runner checks the real URL and delivers to the real webhook URL.
    const check = await eventually('a check of the real URL', () => target.requests('/leaky')[0]);
    expect(check.url).to.equal(`/leaky?key=${query_}&plain=`);
    expect(check.headers.authorization).to.equal(`Basic ${Buffer.from(`${user}:`).toString('base64')}`);
    const down = await eventually(
      'the down alert at the real webhook URL',
      () => hooks.requests(hookPath).find((r) => r.headers['x-telemetry-event'] === 'monitor.down'),
      30_000,
    );
    expect(down.url).to.equal(`${hookPath}?token=${hookQuery}`);
    expect((JSON.parse(down.body) as AlertMessage).monitor).to.deep.equal({ name: 'Tokens in URLs', url: shownUrl });

    // Sending the shown forms back keeps the stored URLs: the next alert goes to the real webhook too.
    const back = await api<Monitor>('PATCH', `/api/monitors/${id}`, {
      name: 'Tokens in URLs, renamed',
      url: shownUrl,
      webhooks: [shownHook],
    });
    expect(back.status, back.text).to.equal(200);
    expect(back.body.data).to.include({ url: shownUrl });
    expect(back.body.data.webhooks).to.deep.equal([shownHook]);
    expect(back.body.data.dropped_secrets).to.deep.equal([]);
    target.set('/leaky', 'ok');
    const up = await eventually(
      'the up alert at the real webhook URL',
      () => hooks.requests(hookPath).find((r) => r.headers['x-telemetry-event'] === 'monitor.up'),
      30_000,
    );
    expect(up.url).to.equal(`${hookPath}?token=${hookQuery}`);
    expect(target.requests('/leaky').at(-1)!.url).to.equal(`/leaky?key=${query_}&plain=`);

    // Answers, delivery records, alerts on the topic, log lines and every table: no token.
    const deliveries = await eventually('both deliveries recorded', async () => {
      const r = await api<WebhookDelivery[]>('GET', `/api/monitors/${id}/webhook-deliveries`);
      return r.body.data.filter((d) => d.status === 'delivered').length >= 2 ? r : undefined;
    });
    expect(deliveries.body.data.every((d) => d.url === shownHook)).to.equal(true);
    const published = await eventually('both alerts on the topic', () => {
      const mine = (alerts.values as AlertMessage[]).filter((a) => a.monitor_id === id);
      return mine.length >= 2 ? mine : undefined;
    });
    expect(published.every((a) => a.monitor.url === shownUrl)).to.equal(true);
    expect(runner.output(), 'the runner logs its deliveries').to.include('webhook delivered');
    const texts = new Map<string, string>([
      ['POST answer', created.text],
      ['GET answer', (await api('GET', `/api/monitors/${id}`)).text],
      ['list answer', (await api('GET', '/api/monitors?limit=1000')).text],
      ['PATCH answer', back.text],
      ['delivery records', deliveries.text],
      [
        'webhook bodies',
        hooks
          .requests(hookPath)
          .map((r) => r.body)
          .join('\n'),
      ],
      ['alerts topic', JSON.stringify(published)],
      ['runner logs', runner.output()],
      ['query service logs', query.logs.lines.join('\n')],
      ...(await everyTable()),
    ]);
    for (const [where, text] of texts) {
      for (const secret of secrets) expect(text.includes(secret), `${where} holds a token`).to.equal(false);
    }
    await api('PATCH', `/api/monitors/${id}`, { paused: true });
  });

  it('reads a monitor stored before webhook URLs were sealed, delivers to its webhook, and seals it at the next start', async () => {
    const id = newMonitorId();
    const pathToken = token('legacy');
    const hookPath = `/legacy/${pathToken}`;
    target.set('/legacy-check', 'error');
    const now = Math.floor(Date.now() / 1000);
    const iso = new Date(now * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const monitor = {
      ...DEFAULT_MONITOR,
      tenant_id: DEFAULT_TENANT,
      id,
      name: 'Stored before',
      url: target.url('/legacy-check'),
      interval_seconds: 1,
      timeout_ms: 500,
      failure_threshold: 1,
      webhooks: [hooks.url(hookPath)],
      created_at: iso,
      updated_at: iso,
    };
    const webhookSecret = newWebhookSecret();
    // The row as this service wrote it before: the URL, headers and signing secret sealed,
    // the webhook URLs in `spec` as they were sent (no `webhooks_sealed` mark).
    const box = runSecretBox();
    const registry = adminRegistry();
    await registry.query(
      `INSERT INTO monitors (id, tenant_id, version, spec, sealed, created_at, updated_at)
       VALUES ($1, $2, 1, $3, $4, to_timestamp($5), to_timestamp($5))`,
      [
        id,
        DEFAULT_TENANT,
        JSON.stringify({ ...monitor, webhook_secret: '' }),
        box.seal(
          JSON.stringify({ url: monitor.url, headers: {}, webhook_secret: webhookSecret }),
          `monitors/${DEFAULT_TENANT}/${id}`,
        ),
        now,
      ],
    );
    const shown = await api<Monitor>('GET', `/api/monitors/${id}`);
    expect(shown.status, shown.text).to.equal(200);
    expect(shown.body.data.webhooks).to.deep.equal([new URL(hooks.url('/')).origin]);
    await eventually(
      'the down alert at the stored webhook URL',
      () => hooks.requests(hookPath).find((r) => r.headers['x-telemetry-event'] === 'monitor.down'),
      30_000,
    );

    // What the query service runs at start: the row is sealed anew, in place.
    expect(await new MonitorStore(registry, box).reseal()).to.equal(1);
    const { rows } = await registry.query<{ version: string; spec: string; sealed: string }>(
      'SELECT version, spec, sealed FROM monitors WHERE id = $1',
      [id],
    );
    expect(rows).to.have.length(1);
    expect(rows[0]!.version, 'the settings did not change').to.equal('1');
    expect(rows[0]!.spec).not.to.include(pathToken);
    expect(rows[0]!.sealed).not.to.include(pathToken);
    expect(await new MonitorStore(registry, box).reseal(), 'nothing left').to.equal(0);
    // Still delivered to the real URL, now read from the sealed secrets.
    const read = await new MonitorStore(adminRegistry(), box).get(id);
    expect(read).to.include({ webhook_secret: webhookSecret });
    expect(read!.webhooks).to.deep.equal([hooks.url(hookPath)]);
    await api('PATCH', `/api/monitors/${id}`, { paused: true });
  });
});
