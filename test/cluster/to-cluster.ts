/**
 * The move to a cluster, proven on the cluster harness (docs/clickhouse.md, "Moving to a
 * cluster"): a plain single-server database on one of the cluster's servers, filled with
 * real rows (events with duplicate copies, checks of several monitors over weeks, alerts),
 * is copied by `npm run migrate -- to-cluster`; the first run is stopped part-way
 * (--max-partitions) and a partition is left half-copied on the cluster, the second run
 * resumes. Then: equal counts per table, rows on both shards, and a monitor's history
 * (GET /api/monitors/{id}/checks, page after page) and summary (…/checks/summary) answer
 * the same from a query service on the single server as from the cluster's query
 * services behind HAProxy.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { createClickHouse, createLogger, sqlIdentifier, sqlString, type ClickHouseClient } from '@telemetry/platform';
import {
  CLUSTER_DDL_TIMEOUT_MS,
  DISTRIBUTED_TABLES,
  migrate,
  type AlertRow,
  type CheckRow,
  type ToClusterReport,
} from '@telemetry/store';
import { waitForClusterUsers, type Cluster } from '../../tools/devstack/cluster.js';
import { storeEnv, waitForUsers } from '../../tools/devstack/users.js';

export interface ToClusterScenarioOptions {
  cluster: Cluster;
  /** CLICKHOUSE_CLUSTER. */
  clusterName: string;
  /** A prefix: `<prefix>_single` is made on the first server, `<prefix>_moved` on the cluster. */
  database: string;
  /** HAProxy in front of every ClickHouse server (the cluster's query services use it). */
  clickhouseUrl: string;
  /** An API key of DEFAULT_TENANT (checks:read, monitors:read, monitors:write) in the registry the query services read. */
  apiKey: string;
  /** A URL monitors may be aimed at (EGRESS_ALLOW); they are made paused, nothing checks them. */
  monitorUrl: string;
  /** Starts a query service with these variables over the run's (and waits until it is ready); the caller stops it. */
  startQuery(label: string, env: Record<string, string>): Promise<{ url: string; port: number }>;
  log(line: string): void;
}

export interface ToClusterFigures {
  name: 'to-cluster';
  ok: boolean;
  notes: string[];
  problems: string[];
  figures: {
    /** Rows of each copied table: on the source, and on the cluster through `_all`. */
    tables: { table: string; source: number; cluster: number }[];
    /** Partitions copied by the first run (stopped), by the second, and found done. */
    firstRun: number;
    secondRun: number;
    skippedBySecond: number;
    /** Seconds of the second run. */
    secondRunSeconds: number;
    /** events and checks rows on each shard. */
    shards: { shard: number; events: number; checks: number }[];
    monitors: number;
    historyPagesCompared: number;
    summariesCompared: number;
  };
}

const DAY = 86_400;
const HOUR = 3600;

export async function toClusterScenario(opts: ToClusterScenarioOptions): Promise<ToClusterFigures> {
  const notes: string[] = [];
  const problems: string[] = [];
  const figures: ToClusterFigures['figures'] = {
    tables: [],
    firstRun: 0,
    secondRun: 0,
    skippedBySecond: 0,
    secondRunSeconds: 0,
    shards: [],
    monitors: 0,
    historyPagesCompared: 0,
    summariesCompared: 0,
  };
  const single = `${opts.database}_single`;
  const moved = `${opts.database}_moved`;
  const sourceNode = opts.cluster.clickhouse[0]!;
  // The target: a server of the second shard (any server of the cluster will do).
  const targetNode = opts.cluster.clickhouse[opts.cluster.clickhouse.length - 1]!;
  const source = createClickHouse({ url: sourceNode.url, username: 'default', password: '', database: 'default' });
  const target = createClickHouse({
    url: targetNode.url,
    username: 'default',
    password: '',
    database: 'default',
    requestTimeoutMs: CLUSTER_DDL_TIMEOUT_MS,
  });
  try {
    // Each database its own users (users.d on every server), as an operator has them: the
    // query services run as their query and registry users, the migrations and the move as
    // the migrators. The rows are filled and counted as `default` (the test, not a service).
    const singleUsers = await opts.cluster.serviceUsers(single);
    const movedUsers = await opts.cluster.serviceUsers(moved);
    const migrator = createClickHouse({
      url: sourceNode.url,
      username: singleUsers.migrator.user,
      password: singleUsers.migrator.password,
      database: 'default',
    });
    try {
      await migrate(migrator, single, createLogger({ service: 'to-cluster', level: 'warn' }), '');
    } finally {
      await migrator.close();
    }
    await waitForUsers(sourceNode.url, single, singleUsers);
    const singleQuery = await opts.startQuery('query-single', {
      ...storeEnv(singleUsers, 'query-service'),
      CLICKHOUSE_URL: sourceNode.url,
      CLICKHOUSE_DATABASE: single,
      CLICKHOUSE_CLUSTER: '',
    });
    const monitors = await makeMonitors(singleQuery.url, opts, source);
    figures.monitors = monitors.length;
    const now = Math.floor(Date.now() / 1000);
    const filled = await fill(source, single, monitors, now);
    notes.push(`the single server's ${single}: ${filled}`);

    // 1. Stopped part-way: three partitions copied, exit code 3.
    const env = {
      CLICKHOUSE_URL: targetNode.url,
      CLICKHOUSE_DATABASE: moved,
      CLICKHOUSE_CLUSTER: opts.clusterName,
      CLICKHOUSE_USER: movedUsers.migrator.user,
      CLICKHOUSE_PASSWORD: movedUsers.migrator.password,
      SOURCE_CLICKHOUSE_URL: sourceNode.url,
      SOURCE_CLICKHOUSE_DATABASE: single,
      SOURCE_CLICKHOUSE_USER: singleUsers.migrator.user,
      SOURCE_CLICKHOUSE_PASSWORD: singleUsers.migrator.password,
    };
    const first = await toClusterCli(env, ['--max-partitions=2', '--json']);
    if (first.code !== 3) problems.push(`the stopped run exited ${first.code}, not 3: ${first.stderr.slice(-400)}`);
    figures.firstRun = first.report?.partitions.filter((p) => p.action === 'copied').length ?? 0;
    // 2. A partition left half-copied, as by a run killed mid-stream: some of its rows on the cluster.
    const plan = await toClusterCli(env, ['--dry-run', '--json']);
    const next = plan.report?.partitions.find((p) => p.action === 'planned' && p.table in PARTITION_KEYS);
    if (next) {
      const half = await halfCopy(source, target, single, moved, next.table, next.partition);
      notes.push(
        `${next.table} partition ${next.partition} left half-copied on the cluster (${half} rows) before resuming`,
      );
    } else {
      problems.push('the dry run planned no events or checks partition after the stopped run');
    }
    // 3. Resumed to the end: exit code 0, every count equal.
    const started = Date.now();
    const second = await toClusterCli(env, ['--json']);
    figures.secondRunSeconds = Math.round((Date.now() - started) / 100) / 10;
    if (second.code !== 0) problems.push(`the resumed run exited ${second.code}: ${second.stderr.slice(-600)}`);
    const report = second.report;
    figures.secondRun = report?.partitions.filter((p) => p.action === 'copied').length ?? 0;
    figures.skippedBySecond = report?.partitions.filter((p) => p.action === 'skipped').length ?? 0;
    if (report && !report.complete) problems.push(`the resumed run is not complete: ${report.mismatches.join('; ')}`);
    if (figures.skippedBySecond !== figures.firstRun) {
      problems.push(
        `the resumed run skipped ${figures.skippedBySecond} partitions, the first copied ${figures.firstRun}`,
      );
    }

    // 4. Counts, our own: every copied table, source against the cluster's `_all`.
    for (const table of Object.keys(DISTRIBUTED_TABLES)) {
      const [db, dbMoved] = table === 'audit_log' ? [`${single}_audit`, `${moved}_audit`] : [single, moved];
      const s = await count(source, `${sqlIdentifier(db)}.${sqlIdentifier(table)}`);
      const c = await count(target, `${sqlIdentifier(dbMoved)}.${sqlIdentifier(`${table}_all`)}`);
      figures.tables.push({ table, source: s, cluster: c });
      if (s !== c) problems.push(`${table}: ${s} rows on the single server, ${c} on the cluster`);
    }
    for (const shard of opts.cluster.shards) {
      const node = createClickHouse({ url: shard[0]!.url, username: 'default', password: '', database: 'default' });
      try {
        const events = await count(node, `${sqlIdentifier(moved)}.events`);
        const checks = await count(node, `${sqlIdentifier(moved)}.checks`);
        figures.shards.push({ shard: shard[0]!.shard, events, checks });
        if (events === 0 || checks === 0) {
          problems.push(`shard ${shard[0]!.shard} holds ${events} events and ${checks} checks`);
        }
      } finally {
        await node.close();
      }
    }

    // 5. The same answers from the single server and through the cluster's balancer.
    await waitForClusterUsers(opts.cluster, moved, movedUsers);
    const clusterQueries = [
      await opts.startQuery('query-moved-1', {
        ...storeEnv(movedUsers, 'query-service'),
        CLICKHOUSE_URL: opts.clickhouseUrl,
        CLICKHOUSE_DATABASE: moved,
        CLICKHOUSE_CLUSTER: opts.clusterName,
      }),
      await opts.startQuery('query-moved-2', {
        ...storeEnv(movedUsers, 'query-service'),
        CLICKHOUSE_URL: opts.clickhouseUrl,
        CLICKHOUSE_DATABASE: moved,
        CLICKHOUSE_CLUSTER: opts.clusterName,
      }),
    ];
    const lb = await opts.cluster.balancer(
      'moved-queries',
      clusterQueries.map((q) => q.port),
      '/readyz',
    );
    try {
      const api = (base: string) => (path: string) => getJson(base, path, opts.apiKey);
      const one = api(singleQuery.url);
      const many = api(lb.url);
      for (const id of monitors) {
        let cursor: string | null = null;
        for (let page = 0; page < 4; page++) {
          const path: string = `/api/monitors/${id}/checks?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
          const [a, b]: [string, string] = await Promise.all([one(path), many(path)]);
          figures.historyPagesCompared++;
          if (a !== b) {
            problems.push(`monitor ${id}: history page ${page + 1} differs (${describeDiff(a, b)})`);
            break;
          }
          cursor = (JSON.parse(a) as { next_cursor: string | null }).next_cursor;
          if (!cursor) break;
        }
        const from = new Date((now - 45 * DAY) * 1000).toISOString().slice(0, 19) + 'Z';
        const to = new Date((Math.floor(now / DAY) * DAY - DAY) * 1000).toISOString().slice(0, 19) + 'Z';
        const dayTo = new Date((Math.floor(now / DAY) * DAY - DAY) * 1000).toISOString().slice(0, 19) + 'Z';
        const dayFrom = new Date((Math.floor(now / DAY) * DAY - 2 * DAY) * 1000).toISOString().slice(0, 19) + 'Z';
        for (const path of [
          `/api/monitors/${id}/checks/summary?interval=day&from=${from}&to=${to}`,
          `/api/monitors/${id}/checks/summary?interval=hour&from=${dayFrom}&to=${dayTo}`,
        ]) {
          const [a, b] = await Promise.all([one(path), many(path)]);
          figures.summariesCompared++;
          if (a !== b) problems.push(`monitor ${id}: ${path.split('?')[1]} differs (${describeDiff(a, b)})`);
        }
      }
    } finally {
      await lb.stop();
    }
    notes.push(
      `moved ${figures.tables.reduce((n, t) => n + t.source, 0)} rows: ${figures.firstRun} partitions by a run stopped ` +
        `with --max-partitions=2, ${figures.secondRun} by the resumed run (${figures.secondRunSeconds} s); ` +
        `${figures.historyPagesCompared} history pages and ${figures.summariesCompared} summaries compared`,
    );
  } catch (err) {
    problems.push(`failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await Promise.all([source.close(), target.close()]);
  }
  return { name: 'to-cluster', ok: problems.length === 0, notes, problems, figures };
}

/** The move's lines in RELIABILITY.md's cluster section. */
export function renderToCluster(r: ToClusterFigures): string {
  const f = r.figures;
  const tables = f.tables
    .filter((t) => t.source > 0)
    .map((t) => `${t.table} ${t.source}/${t.cluster}`)
    .join(', ');
  const shards = f.shards.map((s) => `shard ${s.shard}: ${s.events} events, ${s.checks} checks`).join('; ');
  return [
    `- to-cluster (\`npm run migrate -- to-cluster\`, a single server's database moved to the cluster): ${r.ok ? 'pass' : '**FAIL**'}; ` +
      `rows on the single server / on the cluster: ${tables}; ${shards}; ${f.firstRun} partitions copied by a run stopped ` +
      `with --max-partitions, ${f.secondRun} by the resumed run (${f.secondRunSeconds} s), ${f.skippedBySecond} found done; ` +
      `${f.historyPagesCompared} history pages and ${f.summariesCompared} summaries of ${f.monitors} monitors compared, single server against the cluster's balancer.`,
    ...r.notes.map((n) => `  - ${n}`),
    ...r.problems.map((p) => `  - **${p}**`),
  ].join('\n');
}

/** Paused monitors until both shards have one (checks are sharded by monitor id), four at least. */
async function makeMonitors(queryUrl: string, opts: ToClusterScenarioOptions, ch: ClickHouseClient): Promise<string[]> {
  const ids: string[] = [];
  const shards = new Set<number>();
  while (ids.length < 4 || (shards.size < 2 && ids.length < 16)) {
    const made = await fetch(`${queryUrl}/api/monitors`, {
      method: 'POST',
      headers: { authorization: `Bearer ${opts.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `moved ${ids.length + 1}`,
        url: opts.monitorUrl,
        interval_seconds: 60,
        paused: true,
      }),
    });
    if (made.status !== 201) throw new Error(`creating a monitor answered ${made.status}: ${await made.text()}`);
    const id = ((await made.json()) as { data: { id: string } }).data.id;
    ids.push(id);
    const rs = await ch.query({ query: `SELECT cityHash64(${sqlString(id)}) % 2 AS s`, format: 'JSONEachRow' });
    shards.add(Number((await rs.json<{ s: number }>())[0]?.s));
  }
  return ids;
}

/**
 * Rows as the consumer writes them, in several inserts (several parts per partition):
 * checks every 20 minutes over ten days and hourly for two days some 40 days back, some
 * of them twice (a redelivery), a down-then-up incident per monitor, and events over the
 * same days with a tenth of them twice.
 */
async function fill(ch: ClickHouseClient, db: string, monitors: string[], now: number): Promise<string> {
  const q = sqlIdentifier(db);
  let checks = 0;
  const day0 = Math.floor(now / DAY) * DAY;
  const times: number[] = [];
  for (let t = day0 - 10 * DAY; t < now - HOUR; t += 20 * 60) times.push(t);
  for (let t = day0 - 41 * DAY; t < day0 - 39 * DAY; t += HOUR) times.push(t);
  for (const [m, monitor] of monitors.entries()) {
    const rows: CheckRow[] = times.map((t, i) => ({
      tenant_id: DEFAULT_TENANT,
      monitor_id: monitor,
      created_at: t + m,
      id: randomUUID(),
      status: i % 37 === 5 ? 'down' : 'up',
      response_time: 20 + ((i * 7 + m * 13) % 180),
      status_code: i % 37 === 5 ? 500 : 200,
      error: i % 37 === 5 ? 'HTTP 500' : '',
      location: '',
      tls_days_left: null,
      detail: '',
      timings: '',
      screenshot: 0,
      inserted_at: t + m + 1,
    }));
    for (let i = 0; i < rows.length; i += 400) {
      await ch.insert({ table: `${db}.checks`, values: rows.slice(i, i + 400), format: 'JSONEachRow' });
    }
    const again = rows.filter((_, i) => i % 50 === 3).map((r) => ({ ...r, inserted_at: r.inserted_at + 5 }));
    await ch.insert({ table: `${db}.checks`, values: again, format: 'JSONEachRow' });
    checks += rows.length + again.length;
    const incident = randomUUID();
    const down = rows.find((r) => r.status === 'down')!;
    const alerts: AlertRow[] = (['monitor.down', 'monitor.up'] as const).map((type, i) => ({
      tenant_id: DEFAULT_TENANT,
      id: randomUUID(),
      monitor_id: monitor,
      incident_id: incident,
      type,
      created_at: down.created_at + i * 20 * 60,
      check_id: down.id,
      status: i === 0 ? 'down' : 'up',
      status_code: i === 0 ? 500 : 200,
      error: i === 0 ? 'HTTP 500' : '',
      response_time: down.response_time,
      maintenance: 0,
      actor: '',
      inserted_at: down.created_at + i * 20 * 60,
    }));
    await ch.insert({ table: `${db}.alerts`, values: alerts, format: 'JSONEachRow' });
  }
  // Events: 3000 over the same ten days and 600 forty days back, in three inserts; a tenth again.
  const event = (n: number, from: number, span: number, salt: string): string =>
    `INSERT INTO ${q}.events (tenant_id, event_id, key_id, source, category, payload, client_event_id, id_time, event_time, received_at)
      SELECT ${sqlString(DEFAULT_TENANT)}, generateUUIDv4(), 'k', 'web', 'page', '{}', concat(${sqlString(salt)}, toString(number)),
        toDateTime(${from} + intDiv(number * ${span}, ${n})) AS t, t, t
      FROM system.numbers LIMIT ${n}`;
  await ch.command({ query: event(1500, day0 - 10 * DAY, 5 * DAY, 'a') });
  await ch.command({ query: event(1500, day0 - 5 * DAY, 5 * DAY, 'b') });
  await ch.command({ query: event(600, day0 - 41 * DAY, 2 * DAY, 'c') });
  await ch.command({
    query: `INSERT INTO ${q}.events SELECT * FROM ${q}.events WHERE cityHash64(toString(event_id)) % 10 = 0`,
  });
  const events = await count(ch, `${q}.events`);
  return `${checks} checks of ${monitors.length} monitors, ${monitors.length * 2} alerts, ${events} event rows (duplicate copies included)`;
}

/** The partition keys of the tables halfCopy may leave half-copied. */
const PARTITION_KEYS: Record<string, string> = { events: 'toYYYYMM(id_time)', checks: 'toYYYYMM(created_at)' };

/** Some rows of one partition inserted on the cluster, as a run killed while copying it leaves them. */
async function halfCopy(
  source: ClickHouseClient,
  target: ClickHouseClient,
  single: string,
  moved: string,
  table: string,
  partition: string,
): Promise<number> {
  if (!/^\d+$/.test(partition)) throw new Error(`unexpected partition ${partition}`);
  const rs = await source.query({
    query: `SELECT * FROM ${sqlIdentifier(single)}.${sqlIdentifier(table)} WHERE ${PARTITION_KEYS[table]} = ${partition} LIMIT 50`,
    format: 'JSONEachRow',
  });
  const rows = await rs.json<Record<string, unknown>>();
  await target.insert({
    table: `${moved}.${table}_all`,
    values: rows,
    format: 'JSONEachRow',
    clickhouse_settings: { insert_distributed_sync: 1 },
  });
  return rows.length;
}

async function count(ch: ClickHouseClient, table: string): Promise<number> {
  const rs = await ch.query({ query: `SELECT count() AS n FROM ${table}`, format: 'JSONEachRow' });
  return Number((await rs.json<{ n: string }>())[0]?.n ?? 0);
}

async function getJson(base: string, path: string, key: string): Promise<string> {
  const r = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = await r.text();
  if (!r.ok) return `${r.status} ${body}`;
  return body;
}

function describeDiff(a: string, b: string): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `single: …${a.slice(Math.max(0, i - 40), i + 80)}… cluster: …${b.slice(Math.max(0, i - 40), i + 80)}…`;
}

/** `npm run migrate -- to-cluster` as an operator runs it, from source; its JSON report when it printed one. */
async function toClusterCli(
  env: Record<string, string>,
  args: string[],
): Promise<{ code: number; report?: ToClusterReport; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--conditions=source', 'tools/devstack/migrate-cli.ts', 'to-cluster', ...args],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
  const line = stdout.trim().split('\n').pop() ?? '';
  let report: ToClusterReport | undefined;
  try {
    report = JSON.parse(line) as ToClusterReport;
  } catch {
    report = undefined;
  }
  return { code, report, stderr };
}
