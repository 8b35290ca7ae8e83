import { expect } from 'chai';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ClickHouseInserter,
  INSERT_FORMATS,
  createClickHouse,
  createKafka,
  createLogger,
  detectEngine,
  groupLags,
  runMigrations,
  sqlIdentifier,
} from '@telemetry/platform';
import type { ClickHouseClient } from '@telemetry/platform';
import { createValidators, DEFAULT_TENANT, type IngestRequest } from '@telemetry/contract';
import { toMessages } from '@telemetry/ingest-gateway';
import { loadEnricher } from '@telemetry/stream-consumer';
import {
  LOCAL_LAYOUT,
  applyRetention,
  auditLogSql,
  checksSql,
  webhookDeliveriesSql,
  databasesOf,
  DISTRIBUTED_READ_SETTINGS,
  decodeAlert,
  decodeAuditEntry,
  decodeCheck,
  decodeWebhookDelivery,
  decodeFailedEvent,
  decodeScreenshot,
  eventDecoder,
  failedEventsSql,
  migrate,
  MIGRATIONS,
  MonitorStore,
  parseKey,
  placeholderMonitor,
  retentionRules,
  screenshotSql,
  TENANT_ANALYST_TABLES,
} from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import { startChdbServer, type ChdbServer } from '../../tools/devstack/chdb.js';
import { UA } from '../support/user-agents.js';
import { encodePng } from '../support/png.js';
import {
  adminClickHouse,
  eventually,
  newKey,
  produce,
  runConsumer,
  runGateway,
  runQuery,
  testStack,
  uid,
  type Running,
  adminRegistry,
  selectCount,
  selectRows,
} from '../support/fixtures.js';

const logger = createLogger({ service: 'test', level: 'silent' });

/** Per engine, per public table: column name -> ClickHouse type (docs/public-tables.json). */
type PublicColumns = Record<string, Record<string, Record<string, string>>>;

/** What the snapshot's first key says (a key no engine has, skipped when comparing). */
const SNAPSHOT_NOTE = {
  _note:
    'The public tables (docs/clickhouse.md, "Public tables and the change policy"), per engine: column -> type. test/e2e/engines.int.test.ts fails when a column is removed or retyped; after adding a column run UPDATE_PUBLIC_TABLES=1 npx mocha test/e2e/engines.int.test.ts and commit this file.',
};

/**
 * How `live` differs from `snapshot`: removals and type changes (which the change policy
 * forbids without a deprecation) and columns not yet in the snapshot (to be added to it).
 */
function publicChanges(snapshot: PublicColumns, live: PublicColumns): string[] {
  const problems: string[] = [];
  const update =
    'if the column is meant to be public, run UPDATE_PUBLIC_TABLES=1 npx mocha test/e2e/engines.int.test.ts and commit docs/public-tables.json (and document the column in docs/clickhouse.md)';
  for (const [engine, tables] of Object.entries(live)) {
    const was = snapshot[engine] ?? {};
    for (const [table, columns] of Object.entries(was)) {
      for (const [column, type] of Object.entries(columns)) {
        const now = tables[table]?.[column];
        if (now === undefined)
          problems.push(
            `${engine} ${table}.${column}: removed (a public column is never removed without a deprecation period)`,
          );
        else if (now !== type)
          problems.push(
            `${engine} ${table}.${column}: type ${type} became ${now} (a public column is never retyped without a deprecation period)`,
          );
      }
    }
    for (const [table, columns] of Object.entries(tables)) {
      for (const [column, type] of Object.entries(columns)) {
        if (was[table]?.[column] === undefined)
          problems.push(`${engine} ${table}.${column} (${type}) is not in docs/public-tables.json: ${update}`);
      }
    }
  }
  return problems;
}

/** One SQL engine under test: the 18.16 server, or current ClickHouse (chDB). */
interface Engine {
  name: string;
  url: string;
  ch: ClickHouseClient;
}

/**
 * The current-engine lane (issue 15, docs/clickhouse.md "Two engines"): our migrations
 * and SQL on the ClickHouse 18.16 server and on a current ClickHouse engine (chDB 26.x,
 * behind tools/devstack/chdb-server.ts, fetched into the cache on first use), with the
 * same data and the same expected answers.
 */
describe('two engines: ClickHouse 18.16 and current ClickHouse (chDB)', function () {
  this.timeout(300_000);
  let chdb: ChdbServer;
  let engines: Engine[];

  before(async () => {
    chdb = await startChdbServer();
    engines = [
      { name: '18.16', url: testStack().clickhouseUrl, ch: adminClickHouse() },
      {
        name: 'current',
        url: chdb.url,
        ch: createClickHouse({ url: chdb.url, username: 'default', password: '', database: 'default' }),
      },
    ];
  });
  after(async () => {
    for (const e of engines ?? []) await e.ch.close();
    await chdb?.stop();
  });

  const rows = <T>(e: Engine, sql: string): Promise<T[]> => selectRows<T>(e.ch, sql);
  const count = (e: Engine, sql: string): Promise<number> => selectCount(e.ch, sql);

  /** How many events every documented pattern reads for `where` (docs/clickhouse.md). */
  async function patterns(e: Engine, db: string, where: string, source: string) {
    return {
      final: await count(e, `SELECT count() AS n FROM ${db}.events FINAL WHERE ${where}`),
      limitBy: await count(
        e,
        `SELECT count() AS n FROM (SELECT event_id FROM ${db}.events WHERE ${where} LIMIT 1 BY event_id)`,
      ),
      rollup: await count(
        e,
        `SELECT sum(n) AS n FROM (SELECT uniqExactMerge(events) AS n FROM ${db}.events_per_minute
           WHERE source = '${source}' GROUP BY tenant_id, minute, source, category)`,
      ),
    };
  }

  /**
   * An answer with its t-digest percentiles (the summary's response_time p50/p95/p99)
   * taken out: the digest's interpolation changed between 18.16 and current versions,
   * so those agree within the digest's error (percentiles()), not to the digit.
   */
  function comparable(body: string): unknown {
    if (!body.startsWith('{') || body.trimEnd().includes('\n')) return body; // CSV, NDJSON: as text
    return JSON.parse(body, (k, v: unknown) =>
      k === 'response_time' && typeof v === 'object' && v !== null && 'p50' in v ? 'percentiles' : v,
    );
  }
  /** The answer's percentiles, in order. */
  function percentiles(body: string): number[] {
    const found: number[] = [];
    if (body.startsWith('{') && !body.trimEnd().includes('\n')) {
      JSON.parse(body, (k, v: unknown) => {
        if (k === 'response_time' && typeof v === 'object' && v !== null && 'p50' in v) {
          found.push(...Object.values(v as Record<string, number>));
        }
        return v;
      });
    }
    return found;
  }
  /**
   * Percentiles of one engine within `tolerance` of the other's: with a few samples per
   * hour the digests interpolate differently between neighbouring samples.
   */
  function closePercentiles(a: number[], b: number[], tolerance: number, what: string): void {
    expect(a.length, what).to.equal(b.length);
    a.forEach((x, i) => expect(Math.abs(x - b[i]!), `${what} #${i}`).to.be.at.most(tolerance));
  }

  it('tells the engines apart on SELECT version(): 18.16 takes the plain shapes, current the modern ones', async () => {
    const [legacy, modern] = await Promise.all(engines.map((e) => detectEngine(e.ch)));
    expect(legacy!.version).to.match(/^18\.16\./);
    expect(legacy!.modern).to.equal(false);
    expect(Number(modern!.version.split('.')[0])).to.be.at.least(24);
    expect(modern!.modern).to.equal(true);
    const types = async (e: Engine, db: string) =>
      Object.fromEntries(
        (
          await rows<{ name: string; type: string }>(
            e,
            `SELECT concat(table, '.', name) AS name, type FROM system.columns WHERE database = '${db}'`,
          )
        ).map((r) => [r.name, r.type]),
      );
    const statuses = ['checks.status', 'alerts.status', 'webhook_deliveries.status', 'webhook_deliveries.alert_type'];
    const db = uid('shape').replace(/-/g, '_');
    for (const e of engines) await migrate(e.ch, db, logger);
    const [old, cur] = [await types(engines[0]!, db), await types(engines[1]!, db)];
    const eventTypes = (t: Record<string, string>) => [
      t['events.source'],
      t['events.received_at'],
      t['events.id_time'],
    ];
    expect(eventTypes(old)).to.deep.equal(['String', "DateTime('UTC')", "DateTime('UTC')"]);
    expect(eventTypes(cur)).to.deep.equal(['LowCardinality(String)', "DateTime64(3, 'UTC')", "DateTime64(3, 'UTC')"]);
    expect(statuses.map((c) => old[c])).to.deep.equal(statuses.map(() => 'String'));
    expect(statuses.map((c) => cur[c])).to.deep.equal(statuses.map(() => 'LowCardinality(String)'));
    for (const e of engines) await dropDatabases(e, db);
  });

  it("the distributed reads' settings (DISTRIBUTED_READ_SETTINGS) exist on both engines and a query carrying them runs", async () => {
    const names = Object.keys(DISTRIBUTED_READ_SETTINGS);
    for (const e of engines) {
      const known = await rows<{ name: string }>(
        e,
        `SELECT name FROM system.settings WHERE name IN (${names.map((n) => `'${n}'`).join(', ')}) ORDER BY name`,
      );
      expect(
        known.map((r) => r.name),
        e.name,
      ).to.deep.equal([...names].sort());
      // Unknown settings or values are refused by the server: these are accepted.
      const rs = await e.ch.query({
        query: 'SELECT 1 AS one',
        format: 'JSONEachRow',
        clickhouse_settings: { ...DISTRIBUTED_READ_SETTINGS },
      });
      expect(await rs.json<{ one: number }>(), e.name).to.deep.equal([{ one: 1 }]);
    }
  });

  it('page reads in cluster mode (each shard pages, then the initiator) run on both engines and keep one copy of a check', async () => {
    const db = uid('pages').replace(/-/g, '_');
    const { audit } = databasesOf(db);
    const sharded = { sharded: true };
    // The `_all` tables read as the local ones: the SQL's shape (a SETTINGS clause in the
    // FROM subquery, the outer ORDER BY … LIMIT 1 BY id) on each engine.
    const local = (sql: string): string => sql.replace(/_all`/g, '`');
    for (const e of engines) {
      await migrate(e.ch, db, logger);
      const row = (s: number, id: string, rt: number, ins: number) => ({
        tenant_id: 't1',
        monitor_id: 'mon_pages',
        created_at: `2026-01-01 00:00:0${s}`,
        id,
        status: 'up',
        response_time: rt,
        status_code: 200,
        inserted_at: `2026-01-01 00:01:0${ins}`,
      });
      await e.ch.insert({
        table: `${db}.checks`,
        format: 'JSONEachRow',
        values: [row(1, 'c1', 1, 0), row(2, 'c2', 1, 0), row(3, 'c3', 1, 0), row(3, 'c3', 2, 5)],
      });
      const q = {
        tenantId: 't1',
        monitorId: 'mon_pages',
        from: undefined,
        to: undefined,
        statuses: [],
        cursor: undefined,
      };
      const page = await rows<{ id: string }>(e, local(checksSql(db, sharded, { ...q, limit: 2, order: 'desc' })));
      expect(
        page.map((r) => r.id),
        e.name,
      ).to.deep.equal(['c3', 'c2', 'c1']);
      const asc = await rows<{ id: string }>(e, local(checksSql(db, sharded, { ...q, limit: 1, order: 'asc' })));
      expect(
        asc.map((r) => r.id),
        e.name,
      ).to.deep.equal(['c1', 'c2']);
      const deliveries = local(webhookDeliveriesSql(db, sharded, { tenantId: 't1', monitorId: 'mon_pages', limit: 5 }));
      expect(await rows(e, deliveries), e.name).to.deep.equal([]);
      const entries = local(auditLogSql(db, sharded, { tenantId: 't1', limit: 5 }));
      expect(entries, e.name).to.include(`\`${audit}\`.\`audit_log\``);
      expect(await rows(e, entries), e.name).to.deep.equal([]);
      await dropDatabases(e, db);
      await e.ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(audit)}` });
    }
  });

  async function dropDatabases(e: Engine, database: string): Promise<void> {
    const { data, registry, keys } = databasesOf(database);
    for (const d of [data, registry, keys])
      await e.ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
  }

  /**
   * The public tables' columns (docs/clickhouse.md, "Public tables and the change policy")
   * against the committed snapshot docs/public-tables.json, per engine: a column removed
   * or retyped fails; a column not yet in the snapshot fails too, saying how to add it
   * (UPDATE_PUBLIC_TABLES=1 rewrites the snapshot from what the migrations make).
   */
  it('the public tables keep every column and type of docs/public-tables.json on both engines', async () => {
    const snapshotFile = join(dirname(fileURLToPath(import.meta.url)), '../../docs/public-tables.json');
    const publicTables = [...TENANT_ANALYST_TABLES, 'audit_log'];
    const db = uid('public').replace(/-/g, '_');
    const live: PublicColumns = {};
    for (const e of engines) {
      await migrate(e.ch, db, logger);
      const { data, audit } = databasesOf(db);
      // Unsorted: each table's columns come in their own order (18.16 has no `position` to sort on).
      const found = await rows<{ table: string; name: string; type: string }>(
        e,
        `SELECT table, name, type FROM system.columns
          WHERE (database = '${data}' AND table IN (${publicTables.map((t) => `'${t}'`).join(', ')}))
             OR (database = '${audit}' AND table = 'audit_log')`,
      );
      const tables: Record<string, Record<string, string>> = {};
      for (const t of publicTables) tables[t] = {};
      for (const r of found) tables[r.table]![r.name] = r.type;
      for (const t of publicTables) expect(Object.keys(tables[t]!), `${e.name} ${t}`).to.not.be.empty;
      live[e.name] = tables;
      await dropDatabases(e, db);
      await e.ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(databasesOf(db).audit)}` });
    }
    if (process.env.UPDATE_PUBLIC_TABLES === '1') {
      writeFileSync(snapshotFile, `${JSON.stringify({ ...SNAPSHOT_NOTE, ...live }, null, 2)}\n`);
    }
    const snapshot = JSON.parse(readFileSync(snapshotFile, 'utf8')) as PublicColumns;
    expect(publicChanges(snapshot, live)).to.deep.equal([]);

    // The comparison itself: a removal, a type change and an addition are each reported.
    const [first] = Object.keys(live['current']!.events!);
    const changed = structuredClone(live);
    delete changed['current']!.events![first!];
    changed['18.16']!.checks!.status = 'Int32';
    changed['18.16']!.alerts!.new_column = 'String';
    const problems = publicChanges(live, changed).join('\n');
    expect(problems).to.contain(`current events.${first}: removed`);
    expect(problems).to.contain('18.16 checks.status: type String became Int32');
    expect(problems).to.contain('18.16 alerts.new_column (String) is not in docs/public-tables.json');
    expect(problems).to.contain('UPDATE_PUBLIC_TABLES=1 npx mocha test/e2e/engines.int.test.ts');
  });

  it("retention: 18.16 drops whole partitions, current ClickHouse keeps a TTL that follows the consumer's settings", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const e of engines) {
      const database = uid('ret').replace(/-/g, '_');
      const db = sqlIdentifier(database);
      await migrate(e.ch, database, logger);
      const engine = await detectEngine(e.ch);
      const check = (id: string, createdAt: number) => ({
        tenant_id: DEFAULT_TENANT,
        monitor_id: 'm1',
        created_at: createdAt,
        id,
        status: 'up',
        response_time: 1,
        status_code: 200,
        error: '',
        inserted_at: createdAt,
      });
      await e.ch.insert({
        table: `${db}.checks`,
        format: 'JSONEachRow',
        values: [check('old', now - 400 * 86_400), check('recent', now - 60)],
      });
      const rules = retentionRules({ events: 30, checks: 365, rollups: 400, screenshots: 30 });
      const actions = await applyRetention(e.ch, database, rules, logger, engine);
      if (engine.modern) {
        // Every table the consumer writes takes a TTL on its own time column.
        expect(actions, e.name).to.deep.equal(rules.map((r) => ({ table: r.table, ttlDays: r.days })));
        const ddl = (
          await rows<{ t: string }>(
            e,
            `SELECT engine_full AS t FROM system.tables WHERE database = '${database}' AND name = 'checks'`,
          )
        )[0]!.t;
        expect(ddl).to.include('TTL toDateTime(created_at) + toIntervalDay(365)');
        await e.ch.command({ query: `OPTIMIZE TABLE ${db}.checks FINAL` });
        // Set once: the next run changes nothing; new days change it; 0 removes it.
        expect(await applyRetention(e.ch, database, rules, logger, engine)).to.deep.equal([]);
        const changed = retentionRules({ events: 0, checks: 500, rollups: 400, screenshots: 30 });
        expect(await applyRetention(e.ch, database, changed, logger, engine)).to.deep.equal([
          { table: 'events', ttlDays: 0 },
          { table: 'event_first_seen', ttlDays: 0 },
          { table: 'checks', ttlDays: 500 },
          { table: 'webhook_deliveries', ttlDays: 500 },
        ]);
        const events = (
          await rows<{ t: string }>(
            e,
            `SELECT engine_full AS t FROM system.tables WHERE database = '${database}' AND name = 'events'`,
          )
        )[0]!.t;
        expect(events).not.to.include('TTL');
      } else {
        expect(actions, e.name).to.deep.include({
          table: 'checks',
          partition: new Date((now - 400 * 86_400) * 1000).toISOString().slice(0, 7).replace('-', ''),
        });
      }
      const left = await rows<{ id: string }>(e, `SELECT id FROM ${db}.checks ORDER BY id`);
      expect(left, e.name).to.deep.equal([{ id: 'recent' }]);
      await dropDatabases(e, database);
    }
  });

  it("the consumer's rows of every table read back the same inserted as RowBinary and as JSONEachRow, on both engines", async () => {
    const v = createValidators();
    const at = '2026-11-23T05:00:01.250Z';
    const json = (m: object): Buffer => Buffer.from(JSON.stringify(m));
    const decoded = <T>(d: { ok: true; row: T } | { ok: false; reason: string }): T => {
      if (!d.ok) throw new Error(d.reason);
      return d.row;
    };
    const { enricher } = loadEnricher({ geoipDatabase: '', userAgentCacheBytes: 1 << 20 });
    const events = (modern: boolean): object[] =>
      toMessages(
        {
          events: [
            { source: 'shop', category: 'page_view', payload: { t: 'quote " backslash \\ tab \t é 日本 😀' } },
            { source: 'shop', category: 'checkout', payload: { n: 1.5, a: [1, null] }, id: 'c-1' },
            { source: 's', category: 'c', payload: {}, timestamp: '2026-11-23T05:00:00Z' },
          ],
          sent_at: '2026-11-23T05:00:01Z',
        },
        { keyId: 'k_engines', tenantId: 'ten_lane' },
        at,
        65_536,
      ).map((m, i) => {
        // As the gateway sends them, with an address and a user agent to enrich (the
        // consumer's enrichment columns, LowCardinality on current ClickHouse).
        const message = { ...(JSON.parse(String(m.value)) as object), request_ip: `8.8.8.${i}` };
        const ua = i === 0 ? UA.chromeDesktop : i === 1 ? UA.googlebot : undefined;
        return decoded(eventDecoder(v, modern, enricher)(json(ua ? { ...message, request_user_agent: ua } : message)));
      });
    const check = (error?: string): object =>
      decoded(
        decodeCheck(
          v,
          json({
            id: `chk_${error ?? 'up'}`,
            monitor_id: 'mon_lane',
            status: error ? 'down' : 'up',
            response_time: 12.25,
            status_code: error ? 0 : 200,
            ...(error ? { error } : {}),
            created_at: at,
          }),
        ),
      );
    const alert = decoded(
      decodeAlert(
        v,
        json({
          id: 'alr_1',
          type: 'monitor.down',
          monitor_id: 'mon_lane',
          incident_id: 'chk_timeout',
          created_at: at,
          check: {
            id: 'chk_timeout',
            status: 'down',
            response_time: 1,
            status_code: 0,
            error: 'timeout',
            created_at: at,
          },
          monitor: { name: 'lane', url: 'http://127.0.0.1:1/' },
        }),
      ),
    );
    const delivery = decoded(
      decodeWebhookDelivery(
        v,
        json({
          id: 'whd_1',
          monitor_id: 'mon_lane',
          alert_id: 'alr_1',
          alert_type: 'monitor.down',
          url: 'http://127.0.0.1:1/hook',
          attempt: 2,
          status: 'retrying',
          status_code: 503,
          duration_ms: 42,
          attempted_at: at,
        }),
      ),
    );
    const audit = decoded(
      decodeAuditEntry(
        v,
        json({
          id: `aud_${'0'.repeat(24)}`,
          tenant_id: 'ten_lane',
          at,
          actor: { type: 'person', id: 'per_1', email: 'ada@example.com' },
          action: 'monitor.update',
          target: { type: 'monitor', id: 'mon_lane' },
          outcome: 'ok',
          changes: { name: { before: 'quote " é', after: 'tab \t 日本' }, headers: { after: { 'X-Key': '****' } } },
          ip: '127.0.0.1',
          user_agent: 'curl/8',
          request_id: 'req_1',
        }),
      ),
    );
    // The audit log lives in the data database's `_audit` sibling.
    const tableIn = (db: string, table: string): string =>
      table === 'audit_log' ? `${sqlIdentifier(`${db}_audit`)}.audit_log` : `${sqlIdentifier(db)}.${table}`;
    for (const e of engines) {
      const modern = (await detectEngine(e.ch)).modern;
      const tables: [string, object[]][] = [
        ['events', events(modern)],
        ['checks', [check(), check('timeout')]],
        ['alerts', [alert]],
        ['webhook_deliveries', [delivery]],
        ['audit_log', [audit]],
      ];
      const read: Record<string, string[]> = {};
      for (const format of INSERT_FORMATS) {
        const db = uid(`fmt_${format}`).replace(/-/g, '_');
        await migrate(e.ch, db, logger);
        const inserter = new ClickHouseInserter(e.ch, format);
        for (const [table, rows] of tables) {
          await inserter.insert(tableIn(db, table), rows);
          expect(inserter.used.get(tableIn(db, table)), `${e.name} ${table}`).to.equal(format);
        }
        for (const [table] of tables) {
          const got = await rows<Record<string, unknown>>(e, `SELECT * FROM ${tableIn(db, table)} ORDER BY tuple(*)`);
          (read[table] ??= []).push(JSON.stringify(got));
        }
        await dropDatabases(e, db);
      }
      for (const [table, rowsIn] of tables) {
        const [binary, text] = read[table]!;
        expect(binary, `${e.name} ${table}`).to.equal(text);
        expect(JSON.parse(binary!), `${e.name} ${table}`).to.have.length(rowsIn.length);
      }
      // What the rows hold survives the binary path: escapes, non-ASCII, nulls, milliseconds.
      const ev = JSON.parse(read.events![0]!) as { payload: string; client_ts: string | null; received_at: string }[];
      expect(ev.map((r) => JSON.parse(r.payload) as unknown)).to.deep.include({
        t: 'quote " backslash \\ tab \t é 日本 😀',
      });
      expect(ev.filter((r) => r.client_ts === null)).to.have.length(2);
      const enriched = JSON.parse(read.events![0]!) as Record<string, unknown>[];
      expect(
        enriched.map((r) => [r.client_ip, r.geo_country, r.browser, r.device_type, Number(r.is_bot)]),
      ).to.have.deep.members([
        ['8.8.8.0', 'US', 'Chrome', 'desktop', 0],
        ['8.8.8.0', 'US', 'Googlebot', 'bot', 1],
        ['8.8.8.0', 'US', '', '', 0],
      ]);
      expect(ev[0]!.received_at).to.equal(modern ? '2026-11-23 05:00:01.250' : '2026-11-23 05:00:01');
    }
  });

  it('failed_events (migration 18): a routed event, then its replay mark, read once in its newest state on both engines', async () => {
    const v = createValidators();
    const [message] = toMessages(
      { events: [{ source: 'shop', category: 'order', payload: { price: 'three' } }] },
      { keyId: 'k_engines', tenantId: 'ten_lane' },
      '2026-11-23T05:00:01.250Z',
      65_536,
    );
    const routed = Buffer.from(
      JSON.stringify({
        ...(JSON.parse(String(message!.value)) as object),
        schema_failure: {
          schema_id: 'sch_00000000000000000001',
          version: 2,
          violations: [{ path: '/price', message: 'must be number' }],
        },
      }),
    );
    const d = decodeFailedEvent(v, routed);
    if (!d?.ok) throw new Error(`not decoded: ${JSON.stringify(d)}`);
    // A message without schema_failure is no failed event (decodeEvent takes it).
    expect(decodeFailedEvent(v, message!.value as Buffer)).to.equal(undefined);
    for (const e of engines) {
      const database = uid('failed').replace(/-/g, '_');
      await migrate(e.ch, database, logger);
      const table = `${sqlIdentifier(database)}.failed_events`;
      await e.ch.insert({ table, values: [d.row], format: 'JSONEachRow' });
      const q = { tenantId: 'ten_lane', schemaId: 'sch_00000000000000000001', limit: 10 };
      const failed = await rows<{ event_id: string; schema_version: number; replay_state: string; violations: string }>(
        e,
        failedEventsSql(database, LOCAL_LAYOUT, q),
      );
      expect(
        failed.map((r) => [r.event_id, Number(r.schema_version), r.replay_state, r.violations]),
        e.name,
      ).to.deep.equal([[d.row.event_id, 2, 'failed', '[{"path":"/price","message":"must be number"}]']]);
      await e.ch.insert({
        table,
        values: [
          { ...d.row, replay_state: 'replayed', replayed_at: d.row.inserted_at, row_version: d.row.row_version + 1 },
        ],
        format: 'JSONEachRow',
      });
      expect(await rows(e, failedEventsSql(database, LOCAL_LAYOUT, q)), e.name).to.deep.equal([]);
      const any = await rows<{ replay_state: string }>(
        e,
        failedEventsSql(database, LOCAL_LAYOUT, { ...q, state: 'any' }),
      );
      expect(
        any.map((r) => r.replay_state),
        e.name,
      ).to.deep.equal(['replayed']);
    }
  });

  it('check_screenshots (migration 20): a PNG inserted in both formats reads back the same, and retention removes old ones, on both engines', async () => {
    const v = createValidators();
    const png = encodePng(16, 8, (x, y) => [x * 16, y * 32, 7]);
    const now = Math.floor(Date.now() / 1000);
    const message = (checkId: string, at: number): Buffer =>
      Buffer.from(
        JSON.stringify({
          check_id: checkId,
          monitor_id: 'mon_lane',
          tenant_id: 'ten_lane',
          created_at: new Date(at * 1000).toISOString().replace('.000Z', 'Z'),
          png_base64: png.toString('base64'),
        }),
      );
    const row = (checkId: string, at: number) => {
      const d = decodeScreenshot(v, message(checkId, at));
      if (!d.ok) throw new Error(d.reason);
      return d.row;
    };
    for (const e of engines) {
      const engine = await detectEngine(e.ch);
      const database = uid('shots').replace(/-/g, '_');
      await migrate(e.ch, database, logger);
      const table = `${sqlIdentifier(database)}.check_screenshots`;
      for (const format of INSERT_FORMATS) {
        const inserter = new ClickHouseInserter(e.ch, format);
        await inserter.insert(table, [row(`chk_${format}`, now - 60)]);
        expect(inserter.used.get(table), `${e.name} ${format}`).to.equal(format);
        const [read] = await rows<{ png_base64: string }>(
          e,
          screenshotSql(database, LOCAL_LAYOUT, {
            tenantId: 'ten_lane',
            monitorId: 'mon_lane',
            checkId: `chk_${format}`,
          }),
        );
        expect(Buffer.from(read!.png_base64, 'base64').equals(png), `${e.name} ${format}`).to.equal(true);
        // Another tenant reads nothing of it.
        expect(
          await rows(
            e,
            screenshotSql(database, LOCAL_LAYOUT, {
              tenantId: 'ten_other',
              monitorId: 'mon_lane',
              checkId: `chk_${format}`,
            }),
          ),
        ).to.deep.equal([]);
      }
      if (engine.modern) {
        const [col] = await rows<{ c: string }>(
          e,
          `SELECT compression_codec AS c FROM system.columns
            WHERE database = '${database}' AND table = 'check_screenshots' AND name = 'png_base64'`,
        );
        expect(col!.c, e.name).to.contain('ZSTD');
      }
      // Retention (SCREENSHOT_RETENTION_DAYS): a screenshot of 40 days ago goes, today's stays.
      await e.ch.insert({ table, values: [row('chk_old', now - 40 * 86_400)], format: 'JSONEachRow' });
      const rules = retentionRules({ events: 0, checks: 0, rollups: 0, screenshots: 30 }).filter(
        (r) => r.table === 'check_screenshots',
      );
      const actions = await applyRetention(e.ch, database, rules, logger, engine);
      if (engine.modern) {
        expect(actions, e.name).to.deep.equal([{ table: 'check_screenshots', ttlDays: 30 }]);
        await e.ch.command({ query: `OPTIMIZE TABLE ${table} FINAL` });
      } else {
        // One partition a day: the old screenshot's day goes whole.
        expect(actions, e.name).to.deep.equal([
          {
            table: 'check_screenshots',
            partition: new Date((now - 40 * 86_400) * 1000).toISOString().slice(0, 10).replace(/-/g, ''),
          },
        ]);
      }
      const left = await rows<{ check_id: string }>(e, `SELECT check_id FROM ${table} ORDER BY check_id`);
      expect(
        left.map((r) => r.check_id),
        e.name,
      ).to.deep.equal(INSERT_FORMATS.map((f) => `chk_${f}`).sort());
      await dropDatabases(e, database);
    }
  });

  it('migration 7 keeps every event of a version-6 database once, copies included, on both engines', async () => {
    const t = Math.floor(Date.now() / 1000) - 3 * 86_400;
    const v7 = `${(BigInt(t) * 1000n + 123n)
      .toString(16)
      .padStart(12, '0')
      .replace(/^(.{8})(.{4})$/, '$1-$2')}-7abc-8def-0123456789ab`;
    for (const e of engines) {
      const database = uid('mig7').replace(/-/g, '_');
      const db = sqlIdentifier(database);
      await runMigrations(
        e.ch,
        database,
        MIGRATIONS.filter((m) => m.version <= 6),
        logger,
      );
      const row = (eventId: string, clientId: string, clientTs: number | null, receivedAt: number) => ({
        tenant_id: DEFAULT_TENANT,
        event_id: eventId,
        key_id: 'k1',
        source: 'mig7',
        category: 'view',
        payload: '{"a":1}',
        client_event_id: clientId,
        event_time: clientTs ?? receivedAt,
        client_ts: clientTs,
        sent_at: null,
        received_at: receivedAt,
        inserted_at: receivedAt,
      });
      const id = (n: number): string => `0f8e1c4a-1111-4b8e-8a00-00000000000${n}`;
      await e.ch.insert({
        table: `${db}.events`,
        format: 'JSONEachRow',
        values: [
          // A client id without a time: the retry a day later, across the day boundary.
          row(id(1), 'order-1', null, t),
          row(id(1), 'order-1', null, t + 86_400),
          // A UUIDv7 id, retried 2 s later; a client timestamp, retried 5 s later.
          row(id(2), v7, null, t),
          row(id(2), v7, null, t + 2),
          row(id(3), 'order-3', t - 60, t),
          row(id(3), 'order-3', t - 60, t + 5),
          // No client id: an event of its own, delivered twice by Kafka (same receive time).
          row(id(4), '', null, t),
          row(id(4), '', null, t),
        ],
      });
      expect(await migrate(e.ch, database, logger), e.name).to.deep.equal([
        7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
      ]);
      const where = `source = 'mig7'`;
      expect(await patterns(e, db, where, 'mig7'), e.name).to.deep.equal({ final: 4, limitBy: 4, rollup: 4 });
      await e.ch.command({ query: `OPTIMIZE TABLE ${db}.events FINAL` });
      expect(await count(e, `SELECT count() AS n FROM ${db}.events WHERE ${where}`), e.name).to.equal(4);
      // The client id without a time keeps its first copy's time, for retries after the migration too.
      const seen = await rows<{ id: string; s: string }>(
        e,
        `SELECT toString(event_id) AS id, toString(toUnixTimestamp(toDateTime(id_time))) AS s FROM ${db}.event_first_seen`,
      );
      expect(seen, e.name).to.deep.equal([{ id: id(1), s: String(t) }]);
      const idTimes = await rows<{ id: string; s: string }>(
        e,
        `SELECT toString(event_id) AS id, toString(toUnixTimestamp(toDateTime(id_time))) AS s FROM ${db}.events ORDER BY id`,
      );
      expect(
        idTimes.map((r) => r.s),
        e.name,
      ).to.deep.equal([String(t), String(t), String(t - 60), String(t)]);
      expect(
        await count(e, `SELECT count() AS n FROM system.tables WHERE database = '${database}' AND name LIKE '%__old'`),
      ).to.equal(0);
      await dropDatabases(e, database);
    }
  });

  describe('copies of an event, from every source, are read once on both engines', () => {
    let gateway: Running;
    const consumers: Running[] = [];
    let key: string;
    let modernDb: string;
    const groups = [uid('dedup-legacy'), uid('dedup-current')];

    before(async () => {
      modernDb = uid('dedup').replace(/-/g, '_');
      await migrate(engines[1]!.ch, modernDb, logger);
      gateway = await runGateway({ RATE_LIMIT_PER_SECOND: '0' });
      consumers.push(
        await runConsumer({ CONSUMER_GROUP_ID: groups[0]! }),
        await runConsumer({ CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: modernDb, CONSUMER_GROUP_ID: groups[1]! }),
      );
      key = await newKey({ kind: 'telemetry', name: 'dedup' });
    });
    after(async () => {
      await Promise.all([gateway?.stop(), ...consumers.map((c) => c.stop())]);
      await dropDatabases(engines[1]!, modernDb);
    });

    /**
     * Until `group` has committed every message of `topics` (the events topic by default):
     * the consumer commits only after the rows are inserted. (Counting rows would not do:
     * merges remove copies.)
     */
    async function drained(group: string, topics = [testStack().eventsTopic]): Promise<void> {
      const kafka = createKafka({ brokers: testStack().kafkaBrokers.split(','), clientId: 'engines-test', logger });
      await eventually(
        `${group} has read every message of ${topics.join(', ')}`,
        async () =>
          [...(await groupLags(kafka, group, topics)).values()].every((lag) => lag === 0) ? true : undefined,
        60_000,
      );
    }

    const post = (body: IngestRequest): Promise<Response> =>
      fetch(`${gateway.url}/api/telemetry/events?return=ids`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify(body),
      });

    it('a retry 1.5 s later, a retry after the day boundary, a message delivered twice, a replay', async () => {
      const source = uid('dedup');
      const v7 = `${Date.now()
        .toString(16)
        .padStart(12, '0')
        .replace(/^(.{8})(.{4})$/, '$1-$2')}-7abc-8def-0123456789ab`;
      const request: IngestRequest = {
        events: [
          // The issue's case: client ids, no timestamps.
          { source, category: 'order', payload: { n: 1 }, id: 'ord-1' },
          { source, category: 'order', payload: { n: 2 }, id: 'ord-2' },
          { source, category: 'view', payload: { n: 3 }, id: v7 },
          { source, category: 'view', payload: { n: 4 }, id: 'view-4', timestamp: new Date().toISOString() },
        ],
      };
      // Keys are reloaded every 200 ms in tests.
      const first = await eventually('the key loaded and the request accepted', async () => {
        const r = await post(request);
        return r.status === 200 ? r : undefined;
      });
      const ids = ((await first.json()) as { data: string[] }).data;
      const sentAt = Date.now();
      const db = (e: Engine): string => (e.name === '18.16' ? testStack().database : modernDb);
      const where = `source = '${source}'`;
      for (const g of groups) await drained(g);
      // The client's retry after a timeout: 1.5 s later, so its receive time differs.
      await eventually('1.5 s passed', () => (Date.now() - sentAt >= 1500 ? true : undefined), 5000);
      const retry = await post(request);
      expect(retry.status).to.equal(200);
      expect(((await retry.json()) as { data: string[] }).data).to.deep.equal(ids);
      // A retry after the UTC day boundary, days later: the gateway's own messages for the
      // request, received at a controlled time (toMessages takes the receive time).
      const { keyId } = parseKey(key)!;
      const nextDay = new Date(Math.ceil(Date.now() / 86_400_000) * 86_400_000 + 2 * 86_400_000 + 1000).toISOString();
      const later = toMessages(request, { keyId, tenantId: DEFAULT_TENANT }, nextDay, 1_000_000);
      // The same messages twice: Kafka delivering a message twice.
      await produce(
        testStack().eventsTopic,
        [...later, ...later].map((m) => JSON.parse(String(m.value)) as object),
      );
      for (const g of groups) await drained(g);
      // A consumer replaying after a crash: a new group reads the topic from its start, on both engines.
      const replays = [uid('replay-legacy'), uid('replay-current')];
      const again = [
        await runConsumer({ CONSUMER_GROUP_ID: replays[0]! }),
        await runConsumer({ CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: modernDb, CONSUMER_GROUP_ID: replays[1]! }),
      ];
      try {
        for (const g of replays) await drained(g);
      } finally {
        await Promise.all(again.map((c) => c.stop()));
      }
      for (const e of engines) {
        const read = await patterns(e, db(e), where, source);
        expect(read, e.name).to.deep.equal({ final: 4, limitBy: 4, rollup: 4 });
        await e.ch.command({ query: `OPTIMIZE TABLE ${db(e)}.events FINAL` });
        expect(await count(e, `SELECT count() AS n FROM ${db(e)}.events WHERE ${where}`), e.name).to.equal(4);
        const stored = await rows<{ id: string }>(
          e,
          `SELECT toString(event_id) AS id FROM ${db(e)}.events FINAL WHERE ${where} ORDER BY id`,
        );
        expect(
          stored.map((r) => r.id),
          e.name,
        ).to.deep.equal([...ids].sort());
      }
    });

    it('a request spreading its events over 300 months is kept under its receive time, read once after a retry, and never stops the current engine', async () => {
      // Issue 36, item 1: client times in 300 different months chose 300 partitions of
      // `events` (304 active parts on 18.16); current ClickHouse refused the insert block
      // (252, more than 100 partitions) and the consumer retried it for ever.
      const source = uid('months');
      const request: IngestRequest = {
        events: Array.from({ length: 300 }, (_, i) => ({
          source,
          category: 'far',
          payload: { i },
          id: `far-${i}`,
          timestamp: new Date(Date.UTC(2000, i, 15, 12)).toISOString(),
        })),
      };
      const first = await eventually('the key loaded and the request accepted', async () => {
        const r = await post(request);
        return r.status === 200 ? r : undefined;
      });
      const ids = ((await first.json()) as { data: string[] }).data;
      const sentAt = Date.now();
      // The client's retry: more than a second later, so every copy's receive time differs.
      await eventually('1.1 s passed', () => (Date.now() - sentAt >= 1100 ? true : undefined), 5000);
      const retry = await post(request);
      expect(retry.status).to.equal(200);
      expect(((await retry.json()) as { data: string[] }).data).to.deep.equal(ids);
      for (const g of groups) await drained(g);
      const db = (e: Engine): string => (e.name === '18.16' ? testStack().database : modernDb);
      const where = `source = '${source}'`;
      for (const e of engines) {
        expect(await patterns(e, db(e), where, source), e.name).to.deep.equal({
          final: 300,
          limitBy: 300,
          rollup: 300,
        });
        // Every copy under its first copy's receive time: one partition (two across a month's end).
        const months = await count(e, `SELECT uniqExact(toYYYYMM(id_time)) AS n FROM ${db(e)}.events WHERE ${where}`);
        expect(months, e.name).to.be.at.most(2);
        // The client's own times are kept, in their own column.
        expect(
          await count(
            e,
            `SELECT uniqExact(toYYYYMM(assumeNotNull(client_ts))) AS n FROM ${db(e)}.events WHERE ${where}`,
          ),
          e.name,
        ).to.equal(300);
        await e.ch.command({ query: `OPTIMIZE TABLE ${db(e)}.events FINAL` });
        expect(await count(e, `SELECT count() AS n FROM ${db(e)}.events WHERE ${where}`), e.name).to.equal(300);
      }
    });

    it('a batch ClickHouse refuses whole for its partitions is split on the current engine, and a stuck table holds no other topic', async () => {
      // Check results are written by our runners, but a replay or a bug can carry any
      // time: 150 checks in 150 months are one insert block over current ClickHouse's
      // limit of 100 partitions. The consumer splits it; every row goes in.
      const monitor = uid('months');
      const checks = Array.from({ length: 150 }, (_, i) => ({
        id: `chk_m${String(i).padStart(3, '0')}`,
        monitor_id: monitor,
        status: 'up',
        response_time: 5,
        status_code: 200,
        created_at: new Date(Date.UTC(2010, i, 3)).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      }));
      await produce(testStack().checksTopic, checks, 0);
      await drained(groups[1]!, [testStack().checksTopic]);
      const current = engines[1]!;
      expect(
        await count(current, `SELECT count() AS n FROM ${modernDb}.checks FINAL WHERE monitor_id = '${monitor}'`),
      ).to.equal(150);
      // A table whose inserts keep failing (here: moved away) holds its own topic only:
      // with room for 20 rows per table, the deliveries wait while events keep flowing.
      const isolated = uid('isolated').replace(/-/g, '_');
      await migrate(current.ch, isolated, logger);
      await current.ch.command({
        query: `RENAME TABLE ${isolated}.webhook_deliveries TO ${isolated}.webhook_deliveries_away`,
      });
      const group = uid('isolated');
      const consumer = await runConsumer({
        CLICKHOUSE_URL: chdb.url,
        CLICKHOUSE_DATABASE: isolated,
        CONSUMER_GROUP_ID: group,
        MAX_BUFFERED_ROWS: '20',
        INSERT_RETRY_MAX_MS: '200',
      });
      try {
        const attempted = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
        const deliveries = Array.from({ length: 60 }, (_, i) => ({
          id: `dlv_${uid('x')}_${i}`,
          monitor_id: monitor,
          alert_id: `alr_${i}`,
          alert_type: 'monitor.down',
          url: 'http://127.0.0.1:9/hook',
          attempt: 1,
          status: 'failed',
          status_code: 0,
          duration_ms: 1,
          error: 'connection_refused',
          attempted_at: attempted,
        }));
        await produce(testStack().webhookDeliveriesTopic, deliveries);
        const source = uid('flowing');
        const r = await post({ events: [{ source, category: 'c', payload: {}, id: 'flow-1' }] });
        expect(r.status).to.equal(200);
        await eventually(
          'the event stored while the deliveries table cannot be written',
          async () =>
            (await count(current, `SELECT count() AS n FROM ${isolated}.events WHERE source = '${source}'`)) === 1
              ? true
              : undefined,
          60_000,
        );
        // Nothing was lost: once the table is back, the held deliveries go in.
        await current.ch.command({
          query: `RENAME TABLE ${isolated}.webhook_deliveries_away TO ${isolated}.webhook_deliveries`,
        });
        await eventually(
          'the held deliveries stored once the table is back',
          async () =>
            (await count(
              current,
              `SELECT count() AS n FROM ${isolated}.webhook_deliveries WHERE monitor_id = '${monitor}'`,
            )) >= 60
              ? true
              : undefined,
          60_000,
        );
      } finally {
        await consumer.stop();
        await dropDatabases(current, isolated);
      }
    });

    it('every statement the query service generates gives the same answers on both engines', async () => {
      const m = uid('eng');
      const base = Date.UTC(2026, 10, 20, 9, 0, 0);
      const iso = (ms: number): string => new Date(ms).toISOString();
      // The same registry entry in both, then checks, an incident and deliveries through Kafka.
      const monitor = placeholderMonitor(m, 'Engines');
      const targets = [
        { e: engines[0]!, database: testStack().database, env: {} as Record<string, string> },
        {
          e: engines[1]!,
          database: modernDb,
          env: { CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: modernDb } as Record<string, string>,
        },
      ];
      // One registry (PostgreSQL) serves both engines.
      await new MonitorStore(adminRegistry(), runSecretBox()).saveMany([monitor]);
      const statuses = ['up', 'up', 'degraded', 'down', 'down', 'up'] as const;
      const checks = Array.from({ length: 90 }, (_, i) => {
        const status = statuses[i % statuses.length]!;
        return {
          id: `chk_${String(i).padStart(4, '0')}`,
          monitor_id: m,
          tenant_id: DEFAULT_TENANT,
          status,
          response_time: 50 + ((i * 37) % 400),
          status_code: status === 'down' ? 503 : 200,
          ...(status === 'down' ? { error: 'connection_refused' } : {}),
          created_at: iso(base + i * 120_000),
        };
      });
      const s = testStack();
      await produce(s.checksTopic, [...checks, ...checks.slice(0, 10)]); // and a few copies
      const alert = (type: 'monitor.down' | 'monitor.up', i: number): object => {
        const { id, status, response_time, status_code, created_at } = checks[i]!;
        return {
          id: `alr_${type}_${m}`,
          type,
          monitor_id: m,
          tenant_id: DEFAULT_TENANT,
          incident_id: `inc_${m}`,
          created_at,
          check: { id, status, response_time, status_code, created_at },
          monitor: { name: 'Engines', url: 'http://127.0.0.1:9/' },
        };
      };
      await produce(s.alertsTopic, [alert('monitor.down', 3), alert('monitor.up', 5)]);
      await produce(
        s.webhookDeliveriesTopic,
        [1, 2].map((attempt) => ({
          id: `whd_${attempt}_${m}`,
          monitor_id: m,
          tenant_id: DEFAULT_TENANT,
          alert_id: `alr_monitor.down_${m}`,
          alert_type: 'monitor.down',
          url: 'http://127.0.0.1:9/hook',
          attempt,
          status: attempt === 1 ? 'retrying' : 'delivered',
          status_code: attempt === 1 ? 500 : 200,
          duration_ms: 12 * attempt,
          attempted_at: iso(base + 200_000 + attempt * 1000),
        })),
      );
      // Audit entries about the monitor (and a redelivered copy), for GET /api/audit.
      const entries = [0, 1, 2].map((i) => ({
        id: `aud_${String(i).padStart(24, '0')}`,
        tenant_id: DEFAULT_TENANT,
        at: iso(base + 300_000 + i * 1000),
        actor: { type: 'api_key', id: 'abcdef0123456789', email: '' },
        action: i === 0 ? 'monitor.create' : 'monitor.update',
        target: { type: 'monitor', id: m },
        outcome: 'ok',
        changes: { interval_seconds: { before: 60 + i, after: 61 + i } },
        ip: '127.0.0.1',
        user_agent: 'engines',
        request_id: `req_${i}`,
      }));
      await produce(s.auditTopic, [...entries, entries[1]!]);
      for (const g of groups) await drained(g, [s.checksTopic, s.alertsTopic, s.webhookDeliveriesTopic, s.auditTopic]);
      const services: { query: Running; key: string }[] = [];
      try {
        for (const t of targets) {
          services.push({
            query: await runQuery(t.env),
            key: await newKey({ kind: 'api', name: 'engines', scopes: ['checks:read', 'monitors:read', 'audit:read'] }),
          });
        }
        const paths = [
          `/api/monitors/${m}/checks`,
          `/api/monitors/${m}/checks?limit=7&order=asc`,
          `/api/monitors/${m}/checks?status=down,degraded&limit=5`,
          `/api/monitors/${m}/checks?from=${iso(base + 3_600_000)}&to=${iso(base + 7_200_000)}`,
          `/api/monitors/${m}/checks/summary?from=${iso(base)}&to=${iso(base + 86_400_000)}`,
          `/api/monitors/${m}/checks/summary?interval=day&from=${iso(base - 86_400_000)}&to=${iso(base + 86_400_000)}`,
          // NOTE: not the default range (the last 24 h, empty here): chDB 3.4 writes FORMAT JSON
          // out of order for an empty result WITH TOTALS (its embedded output, not the server's).
          `/api/monitors/${m}/checks/export`,
          `/api/monitors/${m}/checks/export?format=csv&status=down`,
          `/api/monitors/${m}/incidents`,
          `/api/monitors/${m}/webhook-deliveries`,
          `/api/monitors/${m}/webhook-deliveries?status=retrying`,
          `/api/monitors/${m}`,
          `/api/audit?target_id=${m}`,
          `/api/audit?action=monitor.&target_type=monitor&target_id=${m}&limit=2`,
          `/api/audit?action=monitor.create&actor=abcdef0123456789&target_id=${m}`,
          `/api/audit?from=${iso(base + 301_000)}&to=${iso(base + 302_000)}&outcome=ok&target_id=${m}`,
        ];
        const answer = async (svc: { query: Running; key: string }, path: string) => {
          const r = await fetch(`${svc.query.url}${path}`, { headers: { authorization: `Bearer ${svc.key}` } });
          const link = (r.headers.get('link') ?? '').replaceAll(svc.query.url, '');
          return { status: r.status, link, body: await r.text() };
        };
        await eventually('the keys loaded', async () =>
          (await Promise.all(services.map((x) => answer(x, paths[0]!)))).every((a) => a.status === 200)
            ? true
            : undefined,
        );
        for (const path of paths) {
          const [legacy, modern] = await Promise.all(services.map((x) => answer(x, path)));
          expect(legacy!.status, `${path}: ${legacy!.body}`).to.equal(200);
          expect(modern!.status, `${path}: ${modern!.body}`).to.equal(200);
          expect(modern!.link, path).to.equal(legacy!.link);
          // The audit entries are there (three, the redelivered copy folded), not two empty pages.
          if (path === `/api/audit?target_id=${m}`) {
            expect((JSON.parse(legacy!.body) as { data: { id: string }[] }).data.map((x) => x.id)).to.deep.equal(
              [2, 1, 0].map((i) => `aud_${String(i).padStart(24, '0')}`),
            );
          }
          expect(comparable(modern!.body), path).to.deep.equal(comparable(legacy!.body));
          // 10% of the fixture's response-time range (50..449 ms).
          closePercentiles(percentiles(modern!.body), percentiles(legacy!.body), 40, path);
        }
        // Following the cursor pages through the same checks.
        let next: string | undefined = `/api/monitors/${m}/checks?limit=25`;
        let pages = 0;
        while (next !== undefined) {
          const [legacy, modern] = await Promise.all(services.map((x) => answer(x, next!)));
          expect(modern, next).to.deep.equal(legacy);
          next = /<([^>]+)>;\s*rel="next"/.exec(legacy!.link)?.[1];
          pages++;
        }
        expect(pages).to.equal(4);
      } finally {
        await Promise.all(services.map((x) => x.query.stop()));
      }
    });

    it('runs every query of docs/clickhouse.md on both engines, with the same answers where they do not depend on the clock', async () => {
      const text = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../docs/clickhouse.md'), 'utf8');
      const blocks = [...text.matchAll(/```sql\n([\s\S]*?)```/g)].map((b) => b[1]!);
      const statements = blocks
        .flatMap((b) => b.split(/;\s*(?:\n|$)/))
        .map((q) => q.replace(/^\s*--.*$/gm, '').trim())
        .filter((q) => q.length > 0);
      expect(statements.length).to.be.at.least(8);
      // Databases of their own on both engines: the run's shared database holds other tests' rows.
      const fresh = uid('docs').replace(/-/g, '_');
      for (const e of engines) await migrate(e.ch, fresh, logger);
      const dbs = [fresh, fresh];
      for (const q of statements) {
        const answers = [];
        for (const [i, e] of engines.entries()) {
          const { data, registry, keys, audit } = databasesOf(dbs[i]!);
          // The docs' database names and placeholders, made this run's.
          const sql = q
            .replace(/\btelemetry_registry\./g, `${registry}.`)
            .replace(/\btelemetry_keys\./g, `${keys}.`)
            .replace(/\btelemetry_audit\./g, `${audit}.`)
            .replace(/\btelemetry\./g, `${data}.`)
            .replace(/'ten_…'/g, `'${DEFAULT_TENANT}'`)
            .replace(/'[a-z]+_[0-9a-f]*…'/g, "'none'");
          try {
            answers.push(await rows<Record<string, unknown>>(e, sql));
          } catch (err) {
            throw new Error(`${e.name} refused a documented query:\n${sql}\n${(err as Error).message}`);
          }
        }
        // 64-bit integers come quoted from 18.16 and bare from current versions: compared as numbers.
        const numeric = (a: unknown): unknown =>
          JSON.parse(JSON.stringify(a), (_k, v: unknown) =>
            typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v,
          );
        if (!/now\(\)|today\(\)/.test(q)) expect(numeric(answers[1]), q).to.deep.equal(numeric(answers[0]));
      }
      for (const e of engines) await dropDatabases(e, fresh);
    });
  });
});
