import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Monitor } from '@telemetry/contract';
import { createClickHouse, sqlIdentifier, sqlString, sqlStringList } from '@telemetry/platform';
import { createTenant, databaseAccess, databasesOf, issueKey, tableIn, type ServiceUser } from '@telemetry/store';
import {
  adminClickHouse,
  eventually,
  produce,
  runConsumer,
  runGateway,
  runQuery,
  testStack,
  uid,
  type Running,
  type Envelope,
  adminRegistry,
  apiCall,
  selectRows,
} from '../support/fixtures.js';

/**
 * Two tenants, A and B, each with an API key and a telemetry key, on the real pipeline:
 * B can neither see nor touch anything of A's; A's secrets appear in no answer and in no
 * table as plain text; stale If-Match is 412; expired keys are 401 KEY_EXPIRED.
 */
describe('tenants (real Kafka and ClickHouse)', function () {
  this.timeout(180_000);
  let s: ReturnType<typeof testStack>;
  let ch: ReturnType<typeof adminClickHouse>;
  let db: string;
  let query: Running;
  let gateway: Running;
  let consumer: Running;
  const A = { tenant: '', api: '', telemetry: '' };
  const B = { tenant: '', api: '', telemetry: '' };
  const SECRET_HEADER = `Bearer header-secret-${randomUUID()}`;
  const URL_PASSWORD = `pw${randomUUID().replace(/-/g, '')}`;
  let monitor: Monitor;
  let webhookSecret: string;

  const api = <T>(key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    apiCall<T>(query.url, key, method, path, body, headers);

  const rows = <T>(sql: string): Promise<T[]> => selectRows<T>(ch, sql);

  before(async () => {
    s = testStack();
    ch = adminClickHouse();
    db = sqlIdentifier(s.database);
    [query, gateway, consumer] = await Promise.all([runQuery(), runGateway(), runConsumer()]);
    for (const [t, name] of [
      [A, 'tenant A'],
      [B, 'tenant B'],
    ] as const) {
      t.tenant = (await createTenant(adminRegistry(), `${name} ${uid()}`)).tenant_id;
      const scopes = ['checks:read', 'monitors:read', 'monitors:write'];
      t.api = (await issueKey(adminRegistry(), { tenantId: t.tenant, kind: 'api', name, scopes })).key;
      t.telemetry = (await issueKey(adminRegistry(), { tenantId: t.tenant, kind: 'telemetry', name })).key;
    }
    await eventually('keys loaded', async () =>
      (await api(B.api, 'GET', '/api/monitors')).status === 200 ? true : undefined,
    );
    const created = await api<Monitor>(A.api, 'POST', '/api/monitors', {
      name: 'A private',
      url: `http://alice:${URL_PASSWORD}@127.0.0.1:9/private`,
      headers: { Authorization: SECRET_HEADER },
      paused: true,
    });
    expect(created.status, created.text).to.equal(201);
    monitor = created.body.data;
    webhookSecret = monitor.webhook_secret!;
    expect(webhookSecret).to.match(/^whsec_/);

    // A's history through the real topics: two checks, and an incident opened and closed.
    const t0 = Date.now() - 120_000;
    const check = (i: number, status: string) => ({
      id: `chk_t${i}_${monitor.id}`,
      monitor_id: monitor.id,
      tenant_id: A.tenant,
      status,
      response_time: 12,
      status_code: status === 'up' ? 200 : 503,
      created_at: new Date(t0 + i * 1000).toISOString(),
    });
    await produce(s.checksTopic, [check(0, 'down'), check(1, 'up')]);
    const alert = (type: string, i: number) => ({
      id: `alr_${type}_${monitor.id}`,
      type,
      monitor_id: monitor.id,
      tenant_id: A.tenant,
      incident_id: `chk_t0_${monitor.id}`,
      created_at: new Date(t0 + i * 1000).toISOString(),
      check: { ...check(i, i === 0 ? 'down' : 'up'), monitor_id: undefined, tenant_id: undefined },
      monitor: { name: 'A private', url: 'http://127.0.0.1:9/private' },
    });
    await produce(s.alertsTopic, [alert('monitor.down', 0), alert('monitor.up', 1)]);
    await eventually('A sees its checks and incident', async () => {
      const c = await api<unknown[]>(A.api, 'GET', `/api/monitors/${monitor.id}/checks`);
      const i = await api<unknown[]>(A.api, 'GET', `/api/monitors/${monitor.id}/incidents`);
      return c.body.data?.length === 2 && i.body.data?.length === 1 ? true : undefined;
    });
  });

  after(async () => {
    await Promise.all([query?.stop(), gateway?.stop(), consumer?.stop()]);
    await ch?.close();
  });

  it("answers B 404 MONITOR_NOT_FOUND on every route of A's monitor, and lists none of A's", async () => {
    const id = monitor.id;
    const routes: [string, string, unknown?][] = [
      ['GET', `/api/monitors/${id}`],
      ['PATCH', `/api/monitors/${id}`, { name: 'taken over' }],
      ['DELETE', `/api/monitors/${id}`],
      ['POST', `/api/monitors/${id}/webhook-secret`],
      ['GET', `/api/monitors/${id}/checks`],
      ['GET', `/api/monitors/${id}/checks/summary`],
      ['GET', `/api/monitors/${id}/checks/export`],
      ['GET', `/api/monitors/${id}/incidents`],
    ];
    for (const [method, path, body] of routes) {
      const r = await api(B.api, method, path, body);
      expect([r.status, r.body.code], `${method} ${path}`).to.deep.equal([404, 'MONITOR_NOT_FOUND']);
      expect(r.text, `${method} ${path}`).to.not.include('A private');
    }
    const list = await api<Monitor[]>(B.api, 'GET', '/api/monitors?limit=1000');
    expect(list.status).to.equal(200);
    expect(list.body.data.map((m) => m.id)).to.not.include(id);
    // B's own monitor is B's alone, and A's list does not show it.
    const own = await api<Monitor>(B.api, 'POST', '/api/monitors', {
      name: 'B own',
      url: 'http://127.0.0.1:9/',
      paused: true,
    });
    expect(own.status).to.equal(201);
    const listA = await api<Monitor[]>(A.api, 'GET', '/api/monitors?limit=1000');
    expect(listA.body.data.map((m) => m.id))
      .to.include(id)
      .and.not.include(own.body.data.id);
    // Nothing changed for A: the PATCH and DELETE above did nothing.
    const still = await api<Monitor>(A.api, 'GET', `/api/monitors/${id}`);
    expect(still.body.data.name).to.equal('A private');
    const summary = await api<{ checks: number }>(A.api, 'GET', `/api/monitors/${id}/checks/summary?interval=day`);
    expect(summary.status).to.equal(200);
  });

  it("answers B's requests for A's monitor and for an id nobody has with the same work, in the same time", async () => {
    // A query service of its own, whose set of ids is not reloaded during the test: a reload
    // forgets the ids found missing, which would add a lookup to one side only.
    const q = await runQuery({ MONITOR_CACHE_MS: '600000' });
    try {
      const get = async (id: string): Promise<number> => {
        const t = performance.now();
        const r = await fetch(`${q.url}/api/monitors/${id}/checks`, { headers: { authorization: `Bearer ${B.api}` } });
        const body = (await r.json()) as Envelope<unknown>;
        const ms = performance.now() - t;
        expect([r.status, body.code], id).to.deep.equal([404, 'MONITOR_NOT_FOUND']);
        return ms;
      };
      const lookups = async (): Promise<Record<string, number>> => {
        const text = await (await fetch(`${q.url}/metrics`)).text();
        return Object.fromEntries(
          [...text.matchAll(/^query_monitor_lookups_total\{[^}]*answer="(\w+)"[^}]*\} (\d+)/gm)].map((m) => [
            m[1]!,
            Number(m[2]),
          ]),
        );
      };
      const diff = (a: Record<string, number>, b: Record<string, number>): Record<string, number> =>
        Object.fromEntries(
          Object.entries(b)
            .map(([k, n]): [string, number] => [k, n - (a[k] ?? 0)])
            .filter(([, n]) => n !== 0),
        );
      const unknown = `mon_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
      await eventually('the key loaded', async () =>
        (await fetch(`${q.url}/api/monitors?limit=1`, { headers: { authorization: `Bearer ${B.api}` } })).status === 200
          ? true
          : undefined,
      );
      // The work, counted: one lookup each (a ClickHouse read), then the remembered answer.
      const n = 150;
      const times: Record<'foreign' | 'unknown', number[]> = { foreign: [], unknown: [] };
      const work: Record<string, Record<string, number>> = {};
      for (const [side, id] of [
        ['foreign', monitor.id],
        ['unknown', unknown],
      ] as const) {
        const before = await lookups();
        for (let i = 0; i < n; i++) times[side].push(await get(id));
        work[side] = diff(before, await lookups());
      }
      expect(work.foreign).to.deep.equal({ looked_up: 1, not_held_cached: n - 1 });
      expect(work.unknown, 'the same work as for the foreign id').to.deep.equal(work.foreign);
      // The time, interleaved so that the machine's load falls on both alike.
      for (let i = 0; i < n; i++) {
        times.foreign.push(await get(monitor.id));
        times.unknown.push(await get(unknown));
      }
      const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const [f, u] = [median(times.foreign.slice(n)), median(times.unknown.slice(n))];
      process.stdout.write(`      median 404 time: foreign ${f.toFixed(2)} ms, unknown ${u.toFixed(2)} ms\n`);
      expect(Math.abs(f - u), `foreign ${f} ms, unknown ${u} ms`).to.be.lessThan(Math.max(0.5, 0.3 * Math.max(f, u)));
    } finally {
      await q.stop();
    }
  });

  it("keeps A's and B's events with the same source apart, in events and in the rollup", async () => {
    const source = `shared-${uid()}`;
    const post = async (key: string, n: number): Promise<void> => {
      const events = Array.from({ length: n }, (_, i) => ({ source, category: 'page_view', payload: { i } }));
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify({ events }),
      });
      expect(r.status, await r.text()).to.equal(200);
    };
    await post(A.telemetry, 3);
    await post(B.telemetry, 5);
    const expected = { [A.tenant]: 3, [B.tenant]: 5 };
    await eventually('events stored per tenant', async () => {
      const got = await rows<{ tenant_id: string; n: string }>(
        `SELECT tenant_id, count() AS n FROM ${db}.events FINAL WHERE source = ${sqlString(source)} GROUP BY tenant_id`,
      );
      const map = Object.fromEntries(got.map((r) => [r.tenant_id, Number(r.n)]));
      return got.length === 2 && map[A.tenant] === 3 && map[B.tenant] === 5 ? true : undefined;
    });
    // The rollup's view writes its block after the table's, in the same INSERT: a read in
    // between sees the events without their rollup, so it is polled too.
    const rollupOf = async (): Promise<Record<string, number>> =>
      Object.fromEntries(
        (
          await rows<{ tenant_id: string; n: string }>(
            `SELECT tenant_id, uniqExactMerge(events) AS n FROM ${db}.events_per_minute
             WHERE source = ${sqlString(source)} GROUP BY tenant_id ORDER BY tenant_id`,
          )
        ).map((r) => [r.tenant_id, Number(r.n)]),
      );
    await eventually('the rollup per tenant', async () =>
      Object.keys(await rollupOf()).length === 2 ? true : undefined,
    );
    expect(await rollupOf()).to.deep.equal(expected);
  });

  it("shows A's header values, URL password and webhook secret in no answer, and stores none in plain text", async () => {
    const id = monitor.id;
    const answers = [
      await api(A.api, 'GET', `/api/monitors/${id}`),
      await api(A.api, 'GET', '/api/monitors?limit=1000'),
      await api(A.api, 'PATCH', `/api/monitors/${id}`, { name: 'A private' }),
    ];
    for (const a of answers) {
      expect(a.status).to.equal(200);
      for (const secret of [SECRET_HEADER, URL_PASSWORD, webhookSecret]) expect(a.text).to.not.include(secret);
    }
    const shown = answers[0]!.body.data as Monitor;
    expect(shown.headers).to.deep.equal({ Authorization: '****' });
    expect(shown.url, 'no userinfo').to.equal('http://127.0.0.1:9/private');
    // Every table of the three databases, as text: no secret anywhere.
    const tables = await rows<{ database: string; name: string }>(
      `SELECT database, name FROM system.tables
       WHERE database IN ${sqlStringList(Object.values(databasesOf(s.database)))} AND engine NOT LIKE '%View%'`,
    );
    expect(tables.map((t) => t.name)).to.include.members(['monitors', 'alerts', 'checks', 'events', 'access_keys']);
    for (const { database, name } of tables) {
      const rs = await ch.query({
        query: `SELECT * FROM ${sqlIdentifier(database)}.${sqlIdentifier(name)}`,
        format: 'TabSeparated',
      });
      const text = await rs.text();
      for (const secret of [SECRET_HEADER, URL_PASSWORD, webhookSecret]) {
        expect(text.includes(secret), `${name} holds a secret in plain text`).to.equal(false);
      }
    }
    // A rotation shows the new secret once.
    const rotated = await api<Monitor>(A.api, 'POST', `/api/monitors/${id}/webhook-secret`);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.data.webhook_secret)
      .to.match(/^whsec_/)
      .and.not.equal(webhookSecret);
    const after = await api(A.api, 'GET', `/api/monitors/${id}`);
    expect(after.text).to.not.include(rotated.body.data.webhook_secret!);
  });

  it('answers a PATCH or DELETE with a stale If-Match 412 PRECONDITION_FAILED and changes nothing', async () => {
    const id = monitor.id;
    const read = await api<Monitor>(A.api, 'GET', `/api/monitors/${id}`);
    const etag = read.headers.get('etag');
    expect(etag).to.match(/^"\d+"$/);
    const changed = await api<Monitor>(
      A.api,
      'PATCH',
      `/api/monitors/${id}`,
      { name: 'renamed once' },
      { 'if-match': etag! },
    );
    expect(changed.status, changed.text).to.equal(200);
    const next = changed.headers.get('etag');
    expect(BigInt(JSON.parse(next!) as string) > BigInt(JSON.parse(etag!) as string)).to.equal(true);
    for (const [method, body] of [
      ['PATCH', { name: 'lost update' }],
      ['DELETE', undefined],
    ] as const) {
      const stale = await api(A.api, method, `/api/monitors/${id}`, body, { 'if-match': etag! });
      expect([stale.status, stale.body.code], method).to.deep.equal([412, 'PRECONDITION_FAILED']);
    }
    const now = await api<Monitor>(A.api, 'GET', `/api/monitors/${id}`);
    expect(now.body.data.name).to.equal('renamed once');
    expect(now.headers.get('etag')).to.equal(next);
  });

  it('answers an expired key 401 KEY_EXPIRED, on the API and on the gateway', async () => {
    const api1 = (
      await issueKey(adminRegistry(), { tenantId: A.tenant, kind: 'api', name: 'short', expiresInSeconds: 1 })
    ).key;
    const tel1 = (
      await issueKey(adminRegistry(), { tenantId: A.tenant, kind: 'telemetry', name: 'short', expiresInSeconds: 1 })
    ).key;
    await eventually('keys expired', async () => {
      const r = await api(api1, 'GET', '/api/monitors');
      return r.body.code === 'KEY_EXPIRED' ? r : undefined;
    }).then((r) => expect(r.status).to.equal(401));
    // Each key expires at its own second: poll the gateway too (it loads keys every 200 ms).
    const g = await eventually('telemetry key expired', async () => {
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': tel1 },
        body: JSON.stringify({ events: [{ source: 's', category: 'c', payload: {} }] }),
      });
      const body = (await r.json()) as Envelope<unknown>;
      return body.code === 'KEY_EXPIRED' ? { status: r.status, code: body.code } : undefined;
    });
    expect(g).to.deep.equal({ status: 401, code: 'KEY_EXPIRED' });
  });

  it("refuses each service's ClickHouse user the tables it does not need (and lets it use its own)", async () => {
    const t = (role: 'data' | 'registry' | 'keys' | 'audit', table: string) => tableIn(s.database, role, table);
    // The audit log is append-only (docs/access.md): no service user may change or remove an entry.
    const auditLog = t('audit', 'audit_log');
    const tamper = [`ALTER TABLE ${auditLog} DELETE WHERE 1`, `TRUNCATE TABLE ${auditLog}`, `DROP TABLE ${auditLog}`];
    const read = (table: string) => `SELECT count() FROM ${table}`;
    const write = (table: string) => `INSERT INTO ${table} SELECT * FROM ${table} LIMIT 0`;
    // What each user must be able to do, and what it must be refused (docs/operations.md).
    const cases: Record<ServiceUser, { allowed: string[]; refused: string[] }> = {
      ingest: {
        allowed: [read(t('keys', 'access_keys'))],
        refused: [
          read(t('data', 'events')),
          read(t('registry', 'monitors')),
          write(t('keys', 'access_keys')),
          `DROP TABLE ${t('keys', 'access_keys')}`,
        ],
      },
      consumer: {
        // ALTER DELETE on the data tables: retention, and deletions on request (docs/deletions.md).
        allowed: [
          read(t('data', 'events')),
          write(t('data', 'checks')),
          write(t('data', 'webhook_deliveries')),
          `ALTER TABLE ${t('data', 'events')} DELETE WHERE 0`,
        ],
        refused: [
          read(t('keys', 'access_keys')),
          read(t('registry', 'monitors')),
          read(t('keys', 'tenants')),
          write(auditLog),
          ...tamper,
        ],
      },
      audit: {
        allowed: [write(auditLog)],
        refused: [...tamper, read(t('keys', 'access_keys')), write(t('data', 'checks'))],
      },
      // Since the registry moved to PostgreSQL, no service reads the legacy registry tables.
      query: {
        allowed: [
          read(t('data', 'checks')),
          read(t('data', 'webhook_deliveries')),
          read(t('data', 'monitors')),
          read(auditLog),
        ],
        refused: [
          ...tamper,
          write(auditLog),
          read(t('registry', 'monitors')),
          read(t('keys', 'access_keys')),
          write(t('data', 'checks')),
          `DROP TABLE ${t('data', 'checks')}`,
          // Only the consumer deletes events (a deletion request is run there).
          `ALTER TABLE ${t('data', 'events')} DELETE WHERE 0`,
        ],
      },
      // The monitors dimension table's writer. (On 18.16, which grants per database, it may
      // insert into the data database's other tables too: docs/operations.md says so.)
      registry: {
        allowed: [write(t('data', 'monitors'))],
        refused: [
          read(t('keys', 'access_keys')),
          read(t('registry', 'monitors')),
          write(t('registry', 'monitors')),
          `DROP TABLE ${t('data', 'monitors')}`,
        ],
      },
      runner: {
        allowed: [read(t('data', 'checks')), read(t('data', 'alerts'))],
        refused: [read(t('keys', 'access_keys')), read(t('registry', 'monitors')), write(t('data', 'alerts'))],
      },
      analyst: {
        allowed: [
          read(t('data', 'events')),
          read(t('data', 'events_per_minute')),
          read(t('data', 'monitors')),
          read(auditLog),
        ],
        refused: [
          read(t('keys', 'access_keys')),
          read(t('registry', 'monitors')),
          write(t('data', 'events')),
          write(auditLog),
          ...tamper,
        ],
      },
    };
    const denied = /Access denied|readonly mode|DDL queries are prohibited|Not enough privileges/;
    for (const [service, c] of Object.entries(cases) as [ServiceUser, (typeof cases)[ServiceUser]][]) {
      const creds = s.users[service];
      expect(creds.user, `${service} runs as its own user`).to.not.equal('default');
      const client = createClickHouse({
        url: s.clickhouseUrl,
        username: creds.user,
        password: creds.password,
        database: databasesOf(s.database)[databaseAccess(service).databases[0]!],
      });
      try {
        for (const sql of c.allowed) await client.command({ query: sql });
        for (const sql of c.refused) {
          const err = await client.command({ query: sql }).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err, `${service} may run: ${sql}`).to.be.instanceOf(Error);
          expect((err as Error).message, `${service}: ${sql}`).to.match(denied);
        }
      } finally {
        await client.close();
      }
    }
  });
});
