import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { DELETION_LIMITS, type DeletionView } from '@telemetry/contract';
import {
  AppError,
  createClickHouse,
  createLogger,
  detectEngine,
  sqlIdentifier,
  type ClickHouseClient,
} from '@telemetry/platform';
import {
  auditDatabase,
  createDeletion,
  createTenant,
  databasesOf,
  deleteEvents,
  idDigest,
  migrate,
  newDeletionId,
  rowTime,
  DELETION_CLICKHOUSE_TABLES,
} from '@telemetry/store';
import { startChdbServer, type ChdbServer } from '../../tools/devstack/chdb.js';
import { apiClient, type ApiClient } from '../support/api.js';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  runQuery,
  selectCount,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';

const logger = createLogger({ service: 'test', level: 'silent' });

/**
 * Deletion on request (docs/deletions.md) on real Kafka, ClickHouse 18.16 and PostgreSQL:
 * the request, its executor in the stream consumer, the rollup it corrects, the gateway's
 * suppression of new events, and another tenant's events with the same ids untouched.
 */
describe('deletion on request (real Kafka, ClickHouse and PostgreSQL)', function () {
  this.timeout(180_000);
  let gateway: Running;
  let consumer: Running;
  let query: Running;
  const source = uid('del').replace(/-/g, '_');
  const t = { a: '', b: '' };
  const tel = { a: '', b: '' };
  let apiA: ApiClient;
  let apiB: ApiClient;
  let viewer: ApiClient;
  let ch: ClickHouseClient;
  const db = (): string => sqlIdentifier(testStack().database);

  before(async () => {
    ch = adminClickHouse();
    const reg = adminRegistry();
    t.a = (await createTenant(reg, `deletions a ${uid()}`)).tenant_id;
    t.b = (await createTenant(reg, `deletions b ${uid()}`)).tenant_id;
    tel.a = await newKey({ tenantId: t.a, kind: 'telemetry', name: 'del a' });
    tel.b = await newKey({ tenantId: t.b, kind: 'telemetry', name: 'del b' });
    const scopes = ['deletions:read', 'deletions:write'];
    const keyA = await newKey({ tenantId: t.a, kind: 'api', name: 'del api a', scopes });
    const keyB = await newKey({ tenantId: t.b, kind: 'api', name: 'del api b', scopes });
    const viewerKey = await newKey({ tenantId: t.a, kind: 'api', name: 'del viewer', scopes: ['events:read'] });
    [gateway, consumer, query] = await Promise.all([
      runGateway(),
      runConsumer({ DELETIONS_POLL_MS: '200' }),
      runQuery(),
    ]);
    apiA = apiClient(query.url, keyA);
    apiB = apiClient(query.url, keyB);
    viewer = apiClient(query.url, viewerKey);
  });

  after(async () => {
    await Promise.all([gateway?.stop(), consumer?.stop(), query?.stop()]);
    await ch?.close();
  });

  interface Ev {
    id: string;
    user_id?: string;
    anonymous_id?: string;
  }
  const send = async (key: string, events: Ev[]): Promise<number> => {
    const r = await fetch(`${gateway.url}/api/telemetry/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body: JSON.stringify({ events: events.map((e) => ({ source, category: 'c', payload: {}, ...e })) }),
    });
    await r.body?.cancel();
    return r.status;
  };
  const count = (tenant: string, where = '1'): Promise<number> =>
    selectCount(
      ch,
      `SELECT count() AS n FROM ${db()}.events WHERE tenant_id = '${tenant}' AND source = '${source}' AND ${where}`,
    );
  /** The rollup's count of the tenant's events of this source (every minute). */
  const rollup = (tenant: string): Promise<number> =>
    selectCount(
      ch,
      `SELECT sum(n) AS n FROM (SELECT uniqExactMerge(events) AS n FROM ${db()}.events_per_minute
         WHERE tenant_id = '${tenant}' AND source = '${source}' GROUP BY minute, source, category)`,
    );
  const stored = (tenant: string, n: number, where = '1') =>
    eventually(`${n} events of ${tenant} where ${where}`, async () =>
      (await count(tenant, where)) === n ? true : undefined,
    );
  const doneOf = (id: string) =>
    eventually(
      `deletion ${id} done`,
      async () => {
        const r = await apiA<DeletionView>('GET', `/api/deletions/${id}`);
        expect(r.status).to.equal(200);
        expect(r.body.data.state).to.not.equal('failed');
        return r.body.data.state === 'done' ? r.body.data : undefined;
      },
      60_000,
    );
  /** Resolves once the gateway's copy of the registry holds the tenant's newest suppression. */
  const gatewayHasSuppressions = async (tenant: string): Promise<void> => {
    const { rows } = await adminRegistry().query<{ seq: string }>(
      `SELECT max(seq) AS seq FROM registry_changes WHERE entity = 'suppressions' AND id = $1`,
      [tenant],
    );
    const want = Number(rows[0]!.seq);
    await eventually('the gateway has the suppression', async () => {
      const m = await (await fetch(`${gateway.url}/metrics`)).text();
      const seq = Number(/^registry_feed_sequence\{[^}]*\} (\d+)/m.exec(m)?.[1] ?? 0);
      return seq >= want ? true : undefined;
    });
  };
  const suppressedTotal = async (): Promise<number> => {
    const m = await (await fetch(`${gateway.url}/metrics`)).text();
    return Number(/^ingest_events_suppressed_total(?:\{[^}]*\})? (\d+)/m.exec(m)?.[1] ?? 0);
  };

  it('refuses bad requests with documented codes, and callers without deletions:write', async () => {
    const r0 = await viewer('POST', '/api/deletions', { user_ids: ['x'] });
    expect([r0.status, r0.code]).to.deep.equal([403, 'INSUFFICIENT_SCOPE']);
    const r1 = await apiA('POST', '/api/deletions', {});
    expect([r1.status, r1.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    const r2 = await apiA('POST', '/api/deletions', { user_ids: [] });
    expect([r2.status, r2.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    const r3 = await apiA('POST', '/api/deletions', { user_ids: ['bad\u0001id'] });
    expect([r3.status, r3.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    const r4 = await apiA('POST', '/api/deletions', { user_ids: ['x'.repeat(257)] });
    expect([r4.status, r4.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    const many = (p: string) => Array.from({ length: 600 }, (_, i) => `${p}${i}`);
    const r5 = await apiA('POST', '/api/deletions', { user_ids: many('u'), anonymous_ids: many('a') });
    expect([r5.status, r5.code]).to.deep.equal([413, 'TOO_MANY_IDS']);
    const r6 = await apiA('POST', '/api/deletions', { user_ids: ['x'], tenant_id: t.b });
    expect([r6.status, r6.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    const r7 = await apiA('GET', '/api/deletions/not-an-id');
    expect([r7.status, r7.code]).to.deep.equal([400, 'INVALID_PARAMETER']);
    const r8 = await apiA('GET', `/api/deletions/del_${'0'.repeat(20)}`);
    expect([r8.status, r8.code]).to.deep.equal([404, 'DELETION_NOT_FOUND']);
  });

  it("deletes exactly one user's events of the tenant, corrects the rollup, and drops that user's new events", async () => {
    // Tenant A: alice (3, one with an anonymous id too), bob (2), an anonymous visitor (2).
    // Tenant B: alice as well (2): another tenant's user of the same id.
    const ev = (user?: string, anon?: string): Ev => ({
      id: randomUUID(),
      ...(user ? { user_id: user } : {}),
      ...(anon ? { anonymous_id: anon } : {}),
    });
    expect(
      await send(tel.a, [
        ev('alice'),
        ev('alice'),
        ev('alice', 'anon-alice'),
        ev('bob'),
        ev('bob'),
        ev(undefined, 'anon-1'),
        ev(undefined, 'anon-1'),
      ]),
    ).to.equal(200);
    expect(await send(tel.b, [ev('alice'), ev('alice', 'anon-1')])).to.equal(200);
    await stored(t.a, 7);
    await stored(t.b, 2);
    await eventually('the rollups', async () =>
      (await rollup(t.a)) === 7 && (await rollup(t.b)) === 2 ? true : undefined,
    );

    const made = await apiA<DeletionView>('POST', '/api/deletions', { user_ids: ['alice'] });
    expect(made.status).to.equal(202);
    expect(made.headers.get('location')).to.equal(`/api/deletions/${made.body.data.id}`);
    expect(made.body.data).to.include({ state: 'pending', error: '' });
    expect(made.body.data.user_ids).to.deep.equal(['alice']);
    // Another tenant's key does not find it.
    const other = await apiB('GET', `/api/deletions/${made.body.data.id}`);
    expect([other.status, other.code]).to.deep.equal([404, 'DELETION_NOT_FOUND']);

    const done = await doneOf(made.body.data.id);
    expect(done.counts.events).to.equal(3);
    expect(done.counts.rollup_minutes).to.be.at.least(1);
    expect(done.started_at).to.be.a('string');
    expect(done.finished_at).to.be.a('string');
    expect(done.requested_by).to.match(/^key:[0-9a-f]{16}$/);

    expect(await count(t.a, `user_id = 'alice'`)).to.equal(0);
    expect(await count(t.a)).to.equal(4);
    // Tenant B's alice is another tenant's: untouched.
    expect(await count(t.b, `user_id = 'alice'`)).to.equal(2);
    expect(await rollup(t.a)).to.equal(4);
    expect(await rollup(t.b)).to.equal(2);

    // New events of alice: answered 200, never stored; bob's in the same request is.
    await gatewayHasSuppressions(t.a);
    const suppressedBefore = await suppressedTotal();
    const bobLate = ev('bob');
    expect(await send(tel.a, [ev('alice'), bobLate, ev('alice', 'someone')])).to.equal(200);
    await stored(t.a, 1, `client_event_id = '${bobLate.id}'`);
    expect(await count(t.a, `user_id = 'alice'`)).to.equal(0);
    expect(await suppressedTotal()).to.equal(suppressedBefore + 2);
    // The pixel too.
    const pixel = await fetch(
      `${gateway.url}/api/telemetry/pixel.gif?key=${tel.a}&source=${source}&category=c&user_id=alice`,
    );
    await pixel.body?.cancel();
    expect(pixel.status).to.equal(200);
    expect(await suppressedTotal()).to.equal(suppressedBefore + 3);
    // Tenant B's alice still sends.
    expect(await send(tel.b, [ev('alice')])).to.equal(200);
    await stored(t.b, 3, `user_id = 'alice'`);
    await eventually('the rollup counts the late events', async () =>
      (await rollup(t.a)) === 5 && (await rollup(t.b)) === 3 ? true : undefined,
    );

    const list = await apiA<DeletionView[]>('GET', '/api/deletions');
    expect(list.status).to.equal(200);
    expect(list.body.data.map((d) => d.id)).to.include(made.body.data.id);
    expect((await apiB<DeletionView[]>('GET', '/api/deletions')).body.data).to.deep.equal([]);

    // Every deletion is recorded in the audit log: who, when, which ids.
    const audit = `${sqlIdentifier(auditDatabase(testStack().database))}.audit_log`;
    await eventually('the audit entry', async () =>
      (await selectCount(
        ch,
        `SELECT count() AS n FROM ${audit} WHERE tenant_id = '${t.a}' AND action = 'deletion.create' AND target_id = '${made.body.data.id}'`,
      )) === 1
        ? true
        : undefined,
    );
  });

  it("deletes an anonymous id's events of the tenant only, and drops its new events", async () => {
    const before = await count(t.a);
    const anon = await count(t.a, `anonymous_id = 'anon-1'`);
    expect(anon).to.equal(2);
    const made = await apiA<DeletionView>('POST', '/api/deletions', { anonymous_ids: ['anon-1'] });
    expect(made.status).to.equal(202);
    const done = await doneOf(made.body.data.id);
    expect(done.counts.events).to.equal(2);
    expect(await count(t.a, `anonymous_id = 'anon-1'`)).to.equal(0);
    expect(await count(t.a)).to.equal(before - 2);
    expect(await rollup(t.a)).to.equal(before - 2);
    // Tenant B's event with anon-1 stays.
    expect(await count(t.b, `anonymous_id = 'anon-1'`)).to.equal(1);

    await gatewayHasSuppressions(t.a);
    const control = { id: randomUUID(), user_id: 'carol' };
    expect(await send(tel.a, [{ id: randomUUID(), anonymous_id: 'anon-1' }, control])).to.equal(200);
    await stored(t.a, 1, `client_event_id = '${control.id}'`);
    expect(await count(t.a, `anonymous_id = 'anon-1'`)).to.equal(0);
  });

  it("pages the tenant's deletions newest first, and shows none of another tenant's", async () => {
    const first = await apiA<DeletionView[]>('GET', '/api/deletions?limit=1');
    expect(first.status).to.equal(200);
    expect(first.body.data).to.have.length(1);
    expect(first.body.data[0]!.anonymous_ids).to.deep.equal(['anon-1']);
    const cursor = first.body.next_cursor!;
    expect(cursor).to.be.a('string');
    const second = await apiA<DeletionView[]>('GET', `/api/deletions?limit=1&cursor=${cursor}`);
    expect(second.body.data.map((d) => d.user_ids)).to.deep.equal([['alice']]);
    expect(second.body.next_cursor).to.equal(null);
    const bad = await apiA('GET', '/api/deletions?cursor=nonsense');
    expect([bad.status, bad.code]).to.deep.equal([400, 'INVALID_PARAMETER']);
    const unknown = await apiA('GET', '/api/deletions?tenant=x');
    expect([unknown.status, unknown.code]).to.deep.equal([400, 'INVALID_PARAMETER']);
  });

  it('caps a tenant at 10 deletions pending or running (429 RATE_LIMITED, Retry-After) and its suppressed ids (403 QUOTA_EXCEEDED)', async () => {
    const reg = adminRegistry();
    const tc = (await createTenant(reg, `deletions c ${uid()}`)).tenant_id;
    const keyC = await newKey({
      tenantId: tc,
      kind: 'api',
      name: 'del api c',
      scopes: ['deletions:read', 'deletions:write'],
    });
    const apiC = apiClient(query.url, keyC);
    // Ten pending deletions whose lease (as after a transient error) keeps the consumer off them.
    for (let i = 0; i < DELETION_LIMITS.maxOpenPerTenant; i++) {
      await reg.query(
        `INSERT INTO deletions (deletion_id, tenant_id, requested_by, user_ids, anonymous_ids, state, lease_until)
         VALUES ($1, $2, 'test', ARRAY[$3], '{}', $4, now() + interval '1 hour')`,
        [newDeletionId(), tc, `held-${i}`, i === 0 ? 'running' : 'pending'],
      );
    }
    const refused = await apiC('POST', '/api/deletions', { user_ids: ['one-more'] });
    expect([refused.status, refused.code]).to.deep.equal([429, 'RATE_LIMITED']);
    expect(refused.headers.get('retry-after')).to.equal(String(DELETION_LIMITS.retryAfterSeconds));
    const { rows: none } = await reg.query(`SELECT 1 FROM suppressions WHERE tenant_id = $1 AND value = 'one-more'`, [
      tc,
    ]);
    expect(none, 'a refused request suppresses nothing').to.have.length(0);
    // Another tenant is not limited by this one's queue.
    const other = await apiB<DeletionView>('POST', '/api/deletions', { user_ids: [`b-${uid()}`] });
    expect(other.status, other.text).to.equal(202);
    // One of the ten is done: room for one more.
    await reg.query(
      `UPDATE deletions SET state = 'done', lease_until = NULL, finished_at = now()
       WHERE deletion_id = (SELECT deletion_id FROM deletions WHERE tenant_id = $1 AND state = 'pending' LIMIT 1)`,
      [tc],
    );
    const accepted = await apiC<DeletionView>('POST', '/api/deletions', { user_ids: ['one-more'] });
    expect(accepted.status, accepted.text).to.equal(202);
    const again = await apiC('POST', '/api/deletions', { user_ids: ['and-another'] });
    expect([again.status, again.code]).to.deep.equal([429, 'RATE_LIMITED']);

    // The suppression quota (100,000 by default; 3 here) counts the ids a request adds.
    const td = (await createTenant(reg, `deletions d ${uid()}`)).tenant_id;
    const limits = { maxOpen: 100, maxSuppressions: 3 };
    const req = (userIds: string[]) => ({ tenantId: td, requestedBy: 'test', userIds, anonymousIds: [] });
    await createDeletion(reg, req(['q1', 'q2']), limits);
    const over = await createDeletion(reg, req(['q1', 'q3', 'q4']), limits).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(over).to.be.instanceOf(AppError);
    expect((over as AppError).code).to.equal('QUOTA_EXCEEDED');
    // Ids suppressed already do not count again.
    await createDeletion(reg, req(['q1', 'q2', 'q3']), limits);
    const { rows: sup } = await reg.query<{ n: string }>(
      'SELECT count(*) AS n FROM suppressions WHERE tenant_id = $1',
      [td],
    );
    expect(Number(sup[0]!.n)).to.equal(3);
  });

  describe('the deletion SQL on both engines: ClickHouse 18.16 and current ClickHouse (chDB)', () => {
    let chdb: ChdbServer;
    let current: ClickHouseClient;
    before(async function () {
      this.timeout(300_000);
      chdb = await startChdbServer();
      current = createClickHouse({ url: chdb.url, username: 'default', password: '', database: 'default' });
    });
    after(async () => {
      await current?.close();
      await chdb?.stop();
    });

    it('deletes the ids of one tenant from events and recomputes the rollup minutes, on both engines', async function () {
      this.timeout(300_000);
      for (const [name, client] of [
        ['18.16', ch],
        ['current', current],
      ] as const) {
        const database = uid('deleng').replace(/-/g, '_');
        const d = sqlIdentifier(database);
        await migrate(client, database, logger);
        const engine = await detectEngine(client);
        const minute = Math.floor(Date.now() / 60_000) * 60_000;
        const row = (tenant: string, user: string, anon: string, ms: number) => ({
          tenant_id: tenant,
          event_id: randomUUID(),
          key_id: 'k',
          source: 's',
          category: 'c',
          payload: '{}',
          client_event_id: '',
          id_time: rowTime(ms, engine.modern),
          event_time: rowTime(ms, engine.modern),
          client_ts: null,
          sent_at: null,
          received_at: rowTime(ms, engine.modern),
          user_id: user,
          anonymous_id: anon,
        });
        const rows = [
          row('ten_a', 'alice', '', minute + 1000),
          row('ten_a', 'alice', '', minute - 60_000),
          row('ten_a', 'bob', '', minute + 2000),
          row('ten_a', '', 'anon-1', minute + 3000),
          row('ten_b', 'alice', 'anon-1', minute + 4000),
        ];
        await client.insert({ table: `${d}.events`, format: 'JSONEachRow', values: rows });
        // A copy of one event (ReplacingMergeTree keeps it until a merge): deleted too.
        await client.insert({ table: `${d}.events`, format: 'JSONEachRow', values: [rows[0]!] });
        const matching = await selectCount(
          client,
          `SELECT count() AS n FROM ${d}.events WHERE tenant_id = 'ten_a' AND (user_id = 'alice' OR anonymous_id = 'anon-1')`,
        );
        expect(matching, name).to.be.within(3, 4);
        const counts = await deleteEvents({
          ch: client,
          engine,
          database,
          target: { tenantId: 'ten_a', userIds: ['alice'], anonymousIds: ['anon-1'] },
        });
        const tables = DELETION_CLICKHOUSE_TABLES.filter((t) => t === 'events');
        expect(tables, name).to.deep.equal(['events']);
        expect(counts, name).to.deep.include({ events: matching, rollup_minutes: 2 });
        // The mutations' text (readable by every user on 18.16) names digests, never the ids.
        const commands = await (
          await client.query({
            query: `SELECT command FROM system.mutations WHERE database = '${database}'`,
            format: 'JSONEachRow',
          })
        ).json<{ command: string }>();
        expect(commands.length, name).to.be.greaterThan(0);
        for (const { command } of commands) expect(command, name).to.not.match(/alice|anon-1/);
        const ours = commands.filter((c) => c.command.includes(idDigest('alice')));
        expect(ours.length, name).to.be.greaterThan(0);
        for (const { command } of ours) expect(command, name).to.include("tenant_id = 'ten_a'");
        const left = await selectCount(client, `SELECT count() AS n FROM ${d}.events WHERE tenant_id = 'ten_a'`);
        expect(left, name).to.equal(1);
        expect(
          await selectCount(client, `SELECT count() AS n FROM ${d}.events WHERE tenant_id = 'ten_b'`),
          name,
        ).to.equal(1);
        const perMinute = async (tenant: string) =>
          selectCount(
            client,
            `SELECT sum(n) AS n FROM (SELECT uniqExactMerge(events) AS n FROM ${d}.events_per_minute
               WHERE tenant_id = '${tenant}' GROUP BY minute, source, category)`,
          );
        expect(await perMinute('ten_a'), name).to.equal(1);
        expect(await perMinute('ten_b'), name).to.equal(1);
        // Again: nothing left to delete, the rollup as it is.
        const again = await deleteEvents({
          ch: client,
          engine,
          database,
          target: { tenantId: 'ten_a', userIds: ['alice'], anonymousIds: ['anon-1'] },
        });
        expect(again.events, name).to.equal(0);
        expect(await perMinute('ten_a'), name).to.equal(1);
        const { data, registry, keys, audit } = databasesOf(database);
        for (const x of [data, registry, keys, audit])
          await client.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(x)}` });
      }
    });
  });
});
