/**
 * `npm run bench:registry`: what one idle replica's copy of the registry costs, and how
 * fast a change reaches it, with the previous design (every key reloaded from ClickHouse
 * every 2 s, every monitor every 30 s) and the new one (PostgreSQL and its change feed).
 *
 *   1. builds, starts the stack (tools/devstack; or uses KAFKA_BROKERS / CLICKHOUSE_URL /
 *      DATABASE_ADMIN_URL) and makes a fresh ClickHouse database and PostgreSQL database;
 *   2. writes the same BENCH_REGISTRY_KEYS keys and BENCH_REGISTRY_MONITORS monitors into
 *      ClickHouse's tables of before and into PostgreSQL (bench/registry/data.ts);
 *   3. per design, one replica compiled (bench/registry/replica-before.ts, then
 *      replica-after.ts): start-up until its copies are complete, a settle, an idle window
 *      (CPU from /proc, queries and rows the replica counts), then key revocations and
 *      monitor renames evenly spaced, each timed from the write's return to the moment
 *      the replica saw it; stops it;
 *   4. writes the bench:registry section of BENCHMARKS.md, prints the table and every
 *      figure as one JSON object on the last line of stdout; cleans up, also on error or
 *      Ctrl-C.
 *
 * Environment: BENCH_REGISTRY_KEYS (100000), BENCH_REGISTRY_MONITORS (100000),
 * BENCH_REGISTRY_IDLE_SECONDS (60), BENCH_REGISTRY_SETTLE_SECONDS (5),
 * BENCH_REGISTRY_CHANGES (200 of each kind), BENCH_REGISTRY_CHANGE_SECONDS (60),
 * BENCH_REGISTRY_KEY_REFRESH_MS (2000) and BENCH_REGISTRY_MONITOR_REFRESH_MS (30000): the
 * previous design's reloads,
 * BENCH_WRITE (0: leave BENCHMARKS.md alone), --smoke. Only 127.0.0.1 is used.
 * Exit code 0 when both replicas loaded everything and saw every change, 1 otherwise.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, createPostgres, postgresSpec, sqlIdentifier } from '@telemetry/platform';
import { databasesOf, migrate, PG_SERVICE_ROLE_NAMES, pgRoleName, quoteIdent, type KeyRecord } from '@telemetry/store';
import { provisionPostgres, withRegistry } from '../../tools/devstack/postgres.js';
import {
  Child,
  fetchJson,
  freePort,
  RUN_SECRETS_KEYS,
  runSecretBox,
  scriptCommand,
  sleep,
  until,
} from '../../harness/processes.js';
import { fmt, quantiles } from '../../harness/report.js';
import { Benchmark, type Cleanups, envNumber, serviceEnv } from '../../harness/run.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import {
  clickHouseWriter,
  makeRegistry,
  postgresWriter,
  spread,
  writeClickHouse,
  writePostgres,
  type Monitor,
  type Writer,
} from './data.js';
import { adminClickHouse, type BenchContext } from '../common/stack.js';
import { epochMs, type ReplicaStats, type Watch } from './replica.js';
import { renderSection, sideTable, notes, type Design, type RegistryReport, type SideFigures } from './report.js';

const KEYS = envNumber('BENCH_REGISTRY_KEYS', 100_000, 1, true, 2000);
const MONITORS = envNumber('BENCH_REGISTRY_MONITORS', 100_000, 1, true, 2000);
const IDLE_SECONDS = envNumber('BENCH_REGISTRY_IDLE_SECONDS', 60, 1, true, 4);
const SETTLE_SECONDS = envNumber('BENCH_REGISTRY_SETTLE_SECONDS', 5, 0, true, 0);
const CHANGES = envNumber('BENCH_REGISTRY_CHANGES', 200, 1, true, 10);
const CHANGE_SECONDS = envNumber('BENCH_REGISTRY_CHANGE_SECONDS', 60, 0, false, 2);
/**
 * The previous defaults (KEY_REFRESH_MS of the gateway, REGISTRY_REFRESH_MS of the runner);
 * smoke mode reloads the monitors every 5 s so that its run stays short.
 */
const KEY_REFRESH_MS = envNumber('BENCH_REGISTRY_KEY_REFRESH_MS', 2000, 100, true);
const REGISTRY_REFRESH_MS = envNumber('BENCH_REGISTRY_MONITOR_REFRESH_MS', 30_000, 100, true, 5000);
/** The services' default now (REGISTRY_CATCH_UP_MS); the benchmark does not change it. */
const CATCH_UP_MS = Number(postgresSpec.registryCatchUpMs.default);

const bench = new Benchmark('bench:registry');
const log = bench.log;

interface Context extends Pick<BenchContext, 'stack' | 'logDir' | 'pids'> {
  watchFile: string;
  keys: KeyRecord[];
  monitors: Monitor[];
}

function stats(replica: Child): Promise<ReplicaStats> {
  return fetchJson<ReplicaStats>(`${replica.url}/stats`, 'GET', 5000);
}

/** Writes every change, evenly spaced; returns when each write returned (epoch ms) by id. */
async function writeChanges(ctx: Context, writer: Writer): Promise<Map<string, number>> {
  const written = new Map<string, number>();
  const spacing = (CHANGE_SECONDS * 1000) / CHANGES;
  const t0 = performance.now();
  for (let i = 0; i < CHANGES; i++) {
    const wait = t0 + i * spacing - performance.now();
    if (wait > 0) await sleep(wait);
    const key = ctx.keys[i]!;
    await writer.revoke(key);
    written.set(key.key_id, epochMs());
    const m = ctx.monitors[i]!;
    await writer.rename(m);
    written.set(m.id, epochMs());
  }
  return written;
}

async function side(ctx: Context, design: Design, env: Record<string, string>, writer: Writer): Promise<SideFigures> {
  const port = await freePort();
  const replica = new Child({
    name: `replica-${design}`,
    command: scriptCommand(`bench/registry/replica-${design}.ts`, true),
    env: serviceEnv(ctx.stack, '', port, { WATCH_FILE: ctx.watchFile, SECRETS_KEYS: RUN_SECRETS_KEYS, ...env }),
    url: `http://127.0.0.1:${port}`,
    logFile: join(ctx.logDir, `replica-${design}.log`),
  });
  try {
    await replica.start().ready(600_000);
    const readyMs = performance.now() - replica.spawnedAt;
    const loaded = await stats(replica);
    if (loaded.keys !== KEYS || loaded.monitors !== MONITORS) {
      throw new Error(
        `${design}: loaded ${loaded.keys} keys and ${loaded.monitors} monitors, not ${KEYS} and ${MONITORS}`,
      );
    }
    log(
      `  ${design}: loaded in ${fmt(loaded.loadMs ?? NaN)} ms, ready ${fmt(readyMs)} ms after spawn; settling ${SETTLE_SECONDS} s`,
    );
    await sleep(SETTLE_SECONDS * 1000);

    const s0 = await stats(replica);
    const cpu = cpuMeter({ replica: replica.pid, ...ctx.pids });
    await sleep(IDLE_SECONDS * 1000); // the idle window
    const w = cpu();
    const s1 = await stats(replica);
    const idleRssMB = mb(replica.rss.sample() ?? NaN);
    const perMinute = (n: number): number => (n / w.seconds) * 60;
    // The replica's own count (µs); the /proc figure (10 ms ticks) stays in `cpu` as a check.
    const cpuMsPerMinute = perMinute((s1.cpuMicros - s0.cpuMicros) / 1000);
    const cpuPercent = cpuMsPerMinute / 600;
    const idle = {
      seconds: w.seconds,
      cpuPercent,
      cpuMsPerMinute,
      queriesPerMinute: perMinute(s1.queries - s0.queries),
      rowsPerMinute: perMinute(s1.rows - s0.rows),
      cpu: w,
    };
    log(
      `  ${design}: idle ${fmt(idle.cpuMsPerMinute)} ms CPU/min (${fmt(cpuPercent, 2)}%), ` +
        `${fmt(idle.queriesPerMinute, 1)} queries/min, ${fmt(idle.rowsPerMinute)} rows/min; cpu ${JSON.stringify(w)}`,
    );

    log(`  ${design}: ${CHANGES} key revocations and ${CHANGES} monitor renames over ${CHANGE_SECONDS} s...`);
    const written = await writeChanges(ctx, writer);
    let last: ReplicaStats | undefined;
    const expected = CHANGES * 2;
    const seenCount = (s: ReplicaStats): number =>
      Object.keys(s.seen.keys).length + Object.keys(s.seen.monitors).length;
    await until(
      () =>
        `${replica.name} to see every change (${last ? seenCount(last) : 0} of ${expected}); see ${replica.logFile}`,
      async () => ((last = await stats(replica)), seenCount(last) >= expected ? true : undefined),
      (REGISTRY_REFRESH_MS + KEY_REFRESH_MS) * 2 + 60_000,
      250,
    );
    const seen = last!.seen;
    const latencies = (ids: string[], at: Record<string, number>): number[] =>
      ids.map((id) => (at[id] ?? NaN) - (written.get(id) ?? NaN));
    const figures: SideFigures = {
      design,
      keys: loaded.keys,
      monitors: loaded.monitors,
      loadMs: loaded.loadMs ?? NaN,
      readyMs,
      idle,
      peakRssMB: mb(replica.rss.peak()),
      idleRssMB,
      keyRevocationMs: quantiles(
        latencies(
          ctx.keys.slice(0, CHANGES).map((k) => k.key_id),
          seen.keys,
        ),
      ),
      monitorChangeMs: quantiles(
        latencies(
          ctx.monitors.slice(0, CHANGES).map((m) => m.id),
          seen.monitors,
        ),
      ),
      changes: CHANGES,
      seenKeys: Object.keys(seen.keys).length,
      seenMonitors: Object.keys(seen.monitors).length,
      changeSeconds: CHANGE_SECONDS,
    };
    const k = figures.keyRevocationMs;
    const m = figures.monitorChangeMs;
    log(
      `  ${design}: key revocation seen p50/p99/max ${fmt(k.p50)}/${fmt(k.p99)}/${fmt(k.max)} ms, ` +
        `monitor change ${fmt(m.p50)}/${fmt(m.p99)}/${fmt(m.max)} ms; peak RSS ${fmt(figures.peakRssMB)} MB`,
    );
    return figures;
  } finally {
    await replica.close();
  }
}

/** Drops the run's PostgreSQL database and its service roles. */
async function dropPostgres(adminUrl: string, database: string): Promise<void> {
  await withRegistry(adminUrl, async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
    for (const s of PG_SERVICE_ROLE_NAMES)
      await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(pgRoleName(database, s))}`);
  });
}

async function main(cleanups: Cleanups): Promise<RegistryReport> {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-registry-'));
  log(`${fmt(KEYS)} keys, ${fmt(MONITORS)} monitors, ${IDLE_SECONDS} s idle windows; logs in ${logDir}`);
  const { stack, pids, machine } = await bench.stack(cleanups);
  const quiet = createLogger({ service: 'bench-registry', level: 'warn', stream: process.stderr });
  const database = `bench_registry_${randomBytes(4).toString('hex')}`;
  const ch = adminClickHouse(cleanups, stack);
  await migrate(ch, database, quiet);
  if (stack.mode === 'external') {
    cleanups.push(async () => {
      const { data, registry, keys } = databasesOf(database);
      for (const d of [data, registry, keys]) {
        await ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
      }
    });
  }
  const urls = await provisionPostgres(stack.postgresAdminUrl, database, quiet);
  const pool = createPostgres(
    { databaseUrl: urls.owner, databasePoolMax: 4, databaseTimeoutMs: 120_000 },
    quiet,
    'bench-registry',
  );
  cleanups.push(async () => {
    await pool.end();
    // A database and roles of ours on someone else's server: dropped (they hold 100,000 keys).
    if (stack.mode === 'external') await dropPostgres(stack.postgresAdminUrl, database);
  });
  const pgVersion =
    (await pool.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? 'unknown';

  const registry = makeRegistry(KEYS, MONITORS);
  const box = runSecretBox();
  let t = performance.now();
  await writeClickHouse(ch, database, box, registry);
  const clickhouseSeconds = (performance.now() - t) / 1000;
  log(`wrote the registry into ClickHouse in ${fmt(clickhouseSeconds, 1)} s`);
  t = performance.now();
  await writePostgres(pool, box, registry);
  const postgresSeconds = (performance.now() - t) / 1000;
  log(`wrote the registry into PostgreSQL in ${fmt(postgresSeconds, 1)} s`);

  const ctx: Context = {
    stack,
    logDir,
    watchFile: join(logDir, 'watch.json'),
    pids,
    // The changed ones first, spread over the registry.
    keys: spread(registry.keys, CHANGES),
    monitors: spread(registry.monitors, CHANGES),
  };
  const watch: Watch = { keys: ctx.keys.map((k) => k.key_id), monitors: ctx.monitors.map((m) => m.id) };
  writeFileSync(ctx.watchFile, JSON.stringify(watch));

  log('before: ClickHouse, full reloads...');
  const before = await side(
    ctx,
    'before',
    {
      CLICKHOUSE_DATABASE: database,
      KEY_REFRESH_MS: String(KEY_REFRESH_MS),
      REGISTRY_REFRESH_MS: String(REGISTRY_REFRESH_MS),
    },
    clickHouseWriter(ch, database, box),
  );
  log('after: PostgreSQL, change feed...');
  const after = await side(
    ctx,
    'after',
    { DATABASE_URL: urls.owner, REGISTRY_CATCH_UP_MS: String(CATCH_UP_MS) },
    postgresWriter(pool, box),
  );
  return {
    ...bench.head({ ...machine, clickhouse: `${machine.clickhouse}, PostgreSQL ${pgVersion}` }),
    config: {
      keys: KEYS,
      monitors: MONITORS,
      idleSeconds: IDLE_SECONDS,
      settleSeconds: SETTLE_SECONDS,
      changes: CHANGES,
      changeSeconds: CHANGE_SECONDS,
      keyRefreshMs: KEY_REFRESH_MS,
      registryRefreshMs: REGISTRY_REFRESH_MS,
      catchUpMs: CATCH_UP_MS,
    },
    setupSeconds: { clickhouse: clickhouseSeconds, postgres: postgresSeconds },
    database,
    before,
    after,
    clean: [before, after].every((s) => s.seenKeys === CHANGES && s.seenMonitors === CHANGES),
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (r) => `${sideTable(r)}\n\n${notes(r)}`,
  ok: (r) => r.clean,
});
