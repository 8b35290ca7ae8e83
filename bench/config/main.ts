/**
 * `npm run bench:config`: what monitoring as code costs (docs/as-code.md, "Apply"): the
 * configuration API on a document of N monitors, each with a secret header, against the
 * same N monitors created and deleted one by one through POST / DELETE /api/monitors (the
 * anchor), side by side in the same run.
 *
 *   1. builds, starts the stack (tools/devstack; or uses KAFKA_BROKERS / CLICKHOUSE_URL /
 *      DATABASE_ADMIN_URL), provisions a fresh ClickHouse database, topics and PostgreSQL
 *      database, and starts the query service compiled (dist) in its own process; no check
 *      runner: the monitors' URLs (127.0.0.1:9) are never checked;
 *   2. makes a fresh tenant and an API key (monitors:read/write, channels:read/write);
 *   3. per round, alternating: bulk (POST /api/config dry run, apply = create, apply again
 *      unchanged, one edit, GET /api/config export, prune of everything with an empty
 *      monitors section), then the anchor (N POST /api/monitors, N DELETE /api/monitors/:id,
 *      one at a time); each step timed, with the query service's CPU (/proc) and peak RSS;
 *   4. writes the bench:config section of BENCHMARKS.md, prints the table and every figure
 *      as one JSON object on the last line of stdout; cleans up, also on error or Ctrl-C.
 *
 * Settings: --monitors N or BENCH_CONFIG_MONITORS (2000), --rounds N or BENCH_CONFIG_ROUNDS
 * (3), BENCH_WRITE (0: leave BENCHMARKS.md alone), --smoke (20 monitors, 2 rounds). Only
 * 127.0.0.1 is used. Exit code 0 when every step answered what it should, 1 otherwise.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKafka, createLogger, createPostgres, sqlIdentifier } from '@telemetry/platform';
import { createTenant, databasesOf, issueKey, PG_SERVICE_ROLE_NAMES, pgRoleName, quoteIdent } from '@telemetry/store';
import { withRegistry } from '../../tools/devstack/postgres.js';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { HttpClient } from '../../harness/load.js';
import { freePort, serviceCommand, until } from '../../harness/processes.js';
import { fmt } from '../../harness/report.js';
import { Benchmark, type Cleanups, envNumber, pipelineTopics, serviceEnv } from '../../harness/run.js';
import { cpuMeter, mb } from '../../harness/sampler.js';
import { adminClickHouse, startChild } from '../common/stack.js';
import {
  latencyTable,
  notes,
  phaseTable,
  ratioTable,
  renderSection,
  summarize,
  type ConfigReport,
  type Phase,
  type Sample,
} from './report.js';

/** `--monitors N` and `--rounds N` (or `--x=N`) become BENCH_CONFIG_*, so that the report's command shows them. */
function flagsToEnv(argv: readonly string[]): void {
  for (const name of ['monitors', 'rounds']) {
    const i = argv.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
    if (i < 0) continue;
    const arg = argv[i]!;
    const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[i + 1];
    if (value === undefined) throw new Error(`--${name} needs a number`);
    process.env[`BENCH_CONFIG_${name.toUpperCase()}`] = value;
  }
}
flagsToEnv(process.argv.slice(2));

const MONITORS = envNumber('BENCH_CONFIG_MONITORS', 2000, 1, true, 20);
const ROUNDS = envNumber('BENCH_CONFIG_ROUNDS', 3, 1, true, 2);
/** Generous: one request carries the whole document. */
const REQUEST_TIMEOUT_MS = 600_000;

const bench = new Benchmark('bench:config');
const log = bench.log;

interface Api {
  http: HttpClient;
  key: string;
}

interface Answer<T> {
  status: number;
  data: T;
  /** What may be shown of a failed answer: its `error`. */
  error: string;
}

async function call<T>(api: Api, method: string, path: string, body?: unknown): Promise<Answer<T>> {
  const headers: Record<string, string> = { Authorization: `Bearer ${api.key}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await api.http.request(
    method,
    path,
    headers,
    body === undefined ? undefined : JSON.stringify(body),
    REQUEST_TIMEOUT_MS,
  );
  let envelope: { data?: T; error?: unknown } = {};
  try {
    envelope = JSON.parse(r.body) as typeof envelope;
  } catch {
    // not JSON: reported by its start
  }
  // Only the error part is ever shown: an answer's data may hold a generated secret (webhook_secret).
  const shown = envelope.error === undefined ? r.body.slice(0, 200) : JSON.stringify(envelope.error).slice(0, 2000);
  return { status: r.status, data: envelope.data as T, error: shown };
}

/** The answer's data when it is a 2xx. */
function expectOk<T>(what: string, a: Answer<T>): T {
  if (a.status < 200 || a.status > 299) throw new Error(`${what}: ${a.status} ${a.error}`);
  return a.data;
}

interface Plan {
  applied: boolean;
  summary: { create: number; update: number; delete: number; unchanged: number };
}

/** Monitor `i` as a document item (and, with its key, as a POST /api/monitors body). */
function monitorItem(i: number, secret: string, interval = 60) {
  const key = `bench-${String(i).padStart(5, '0')}`;
  return {
    key,
    name: `Bench ${i}`,
    // Loopback, port 9 (discard): nothing checks these monitors (no check runner runs).
    url: `http://127.0.0.1:9/${key}`,
    interval_seconds: interval,
    headers: { Authorization: `Bearer ${secret}-${i}` },
  };
}

/** Runs `step`, timed, with the query service's CPU and peak RSS over it. */
async function measured<T>(
  service: { pid: number | undefined; rss: { sample(): unknown; peak(from?: number, to?: number): number } },
  phase: Phase,
  round: number,
  step: () => Promise<T>,
): Promise<{ sample: Sample; result: T }> {
  const meter = cpuMeter({ query: service.pid });
  const t0 = performance.now();
  const result = await step();
  const t1 = performance.now();
  service.rss.sample();
  const w = meter();
  const sample: Sample = {
    phase,
    round,
    ms: t1 - t0,
    queryCpuSeconds: ((w.processes.query ?? NaN) * w.seconds) / 100,
    queryCpuPercent: w.processes.query ?? NaN,
    peakRssMB: mb(service.rss.peak(t0, t1 + 1)),
    otherCpuPercent: w.otherPercent,
  };
  log(
    `  round ${round} ${phase}: ${fmt(sample.ms)} ms, query CPU ${fmt(sample.queryCpuSeconds, 2)} s ` +
      `(${fmt(sample.queryCpuPercent)}%), peak RSS ${fmt(sample.peakRssMB)} MB, other CPU ${fmt(sample.otherCpuPercent)}%`,
  );
  return { sample, result };
}

function expectSummary(what: string, plan: Plan, want: Plan['summary'], applied: boolean): void {
  const got = plan.summary;
  if (plan.applied !== applied || (Object.keys(want) as (keyof Plan['summary'])[]).some((k) => got[k] !== want[k])) {
    throw new Error(`${what}: expected ${JSON.stringify({ applied, ...want })}, got ${JSON.stringify(plan)}`);
  }
}

/** Drops the run's PostgreSQL database and its service roles (a server someone else runs). */
async function dropPostgres(adminUrl: string, database: string): Promise<void> {
  await withRegistry(adminUrl, async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
    for (const s of PG_SERVICE_ROLE_NAMES)
      await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(pgRoleName(database, s))}`);
  });
}

async function main(cleanups: Cleanups): Promise<ConfigReport> {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-config-'));
  log(`${fmt(MONITORS)} monitors, ${ROUNDS} rounds; logs in ${logDir}`);
  const { stack, machine } = await bench.stack(cleanups);
  const quiet = createLogger({ service: 'bench-config', level: 'warn', stream: process.stderr });
  const database = `bench_config_${randomBytes(4).toString('hex')}`;
  const pipeline = pipelineTopics(`bench.${database}`);
  const users = await provision(stack, { database, topics: pipeline.list, partitions: 1, logger: quiet });
  const ch = adminClickHouse(cleanups, stack);
  if (stack.mode === 'external') {
    cleanups.push(async () => {
      const { data, registry, keys, audit } = databasesOf(database);
      for (const d of [data, registry, keys, audit]) {
        await ch.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(d)}` });
      }
      const admin = createKafka({
        brokers: stack.kafkaBrokers.split(','),
        clientId: 'bench-config',
        logger: quiet,
      }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics: pipeline.list }).finally(() => admin.disconnect());
      await dropPostgres(stack.postgresAdminUrl, database);
    });
  }
  const owner = createPostgres(
    { databaseUrl: users.postgres!.owner, databasePoolMax: 2, databaseTimeoutMs: 60_000 },
    quiet,
    'bench-config',
  );
  cleanups.push(() => owner.end());
  const pgVersion =
    (await owner.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v ?? 'unknown';

  const tenant = await createTenant(owner, `bench-config-${randomBytes(3).toString('hex')}`);
  const { key } = await issueKey(owner, {
    tenantId: tenant.tenant_id,
    kind: 'api',
    name: 'bench:config',
    scopes: ['monitors:read', 'monitors:write', 'channels:read', 'channels:write'],
  });

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const service = await startChild(
    cleanups,
    {
      name: 'query-service',
      command: serviceCommand('query-service', true),
      env: serviceEnv(stack, database, port, {
        ...storeEnv(users, 'query-service'),
        ...pipeline.env,
        PUBLIC_URL: url,
        CONSUMER_GROUP_ID: `${database}-tail`,
        // The bulk side and the anchor never hold more than N monitors at once.
        MONITORS_PER_TENANT: String(Math.max(1000, MONITORS + 10)),
        EGRESS_ALLOW: '127.0.0.1/32',
      }),
      url,
      logFile: join(logDir, 'query-service.log'),
    },
    { readyMs: 90_000, closeMs: 15_000 },
  );
  log(`query service ready at ${url} (pid ${service.pid}); tenant ${tenant.tenant_id}`);
  const http = new HttpClient(url, 1);
  cleanups.push(() => Promise.resolve(http.close()));
  const api: Api = { http, key };
  // The key reaches the service through the registry's change feed.
  await until(
    () => 'the API key to be accepted (GET /api/config)',
    async () => ((await call(api, 'GET', '/api/config')).status === 200 ? true : undefined),
    60_000,
    100,
  );

  const secret = randomBytes(12).toString('hex');
  const items = Array.from({ length: MONITORS }, (_, i) => monitorItem(i, secret));
  const doc = { version: 1, monitors: items };
  const edited = { version: 1, monitors: [monitorItem(0, secret, 120), ...items.slice(1)] };
  log(`document: ${fmt(JSON.stringify(doc).length / 1024)} KiB`);

  const samples: Sample[] = [];
  const createEachMs: number[] = [];
  const deleteEachMs: number[] = [];
  const n = MONITORS;
  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round} of ${ROUNDS}: bulk (POST /api/config)...`);
    const post = (q: string, body: unknown) => async () =>
      expectOk<Plan>(`POST /api/config${q}`, await call(api, 'POST', `/api/config${q}`, body));
    const steps: [Phase, () => Promise<Plan>, Plan['summary'], boolean][] = [
      ['dry run', post('?dry_run=true', doc), { create: n, update: 0, delete: 0, unchanged: 0 }, false],
      ['create', post('', doc), { create: n, update: 0, delete: 0, unchanged: 0 }, true],
      ['unchanged', post('', doc), { create: 0, update: 0, delete: 0, unchanged: n }, true],
      ['one edit', post('', edited), { create: 0, update: 1, delete: 0, unchanged: n - 1 }, true],
    ];
    for (const [phase, step, want, applied] of steps) {
      const { sample, result } = await measured(service, phase, round, step);
      expectSummary(phase, result, want, applied);
      samples.push(sample);
    }
    const exp = await measured(service, 'export', round, async () =>
      expectOk<{ document: { monitors?: { key: string; headers?: Record<string, unknown> }[] } }>(
        'GET /api/config',
        await call(api, 'GET', '/api/config'),
      ),
    );
    const exported = exp.result.document.monitors ?? [];
    const pinned = exported.every((m) => {
      const v = m.headers?.Authorization as { fingerprint?: unknown } | undefined;
      return typeof v?.fingerprint === 'string';
    });
    if (exported.length !== n || !pinned) {
      throw new Error(`export: ${exported.length} monitors (expected ${n}), secret headers pinned: ${pinned}`);
    }
    samples.push(exp.sample);
    const prune = await measured(service, 'prune', round, post('?prune=true', { version: 1, monitors: [] }));
    expectSummary('prune', prune.result, { create: 0, update: 0, delete: n, unchanged: 0 }, true);
    samples.push(prune.sample);

    log(`round ${round} of ${ROUNDS}: anchor (POST and DELETE /api/monitors, one at a time)...`);
    const ids: string[] = [];
    const created = await measured(service, 'create one by one', round, async () => {
      for (const item of items) {
        const t = performance.now();
        const m = expectOk<{ id: string }>('POST /api/monitors', await call(api, 'POST', '/api/monitors', item));
        createEachMs.push(performance.now() - t);
        ids.push(m.id);
      }
    });
    samples.push(created.sample);
    const deleted = await measured(service, 'delete one by one', round, async () => {
      for (const id of ids) {
        const t = performance.now();
        expectOk('DELETE /api/monitors/:id', await call(api, 'DELETE', `/api/monitors/${id}`));
        deleteEachMs.push(performance.now() - t);
      }
    });
    samples.push(deleted.sample);
  }
  const left = expectOk<{ document: { monitors?: unknown[] } }>(
    'GET /api/config',
    await call(api, 'GET', '/api/config'),
  );

  return {
    ...bench.head({ ...machine, clickhouse: `${machine.clickhouse}, PostgreSQL ${pgVersion}` }),
    config: { monitors: MONITORS, rounds: ROUNDS, documentKiB: JSON.stringify(doc).length / 1024 },
    database,
    tenant: tenant.tenant_id,
    peakRssMB: mb(service.rss.peak()),
    ...summarize(samples, createEachMs, deleteEachMs),
    samples,
    clean: (left.document.monitors ?? []).length === 0,
  };
}

await bench.run(main, {
  render: renderSection,
  tables: (r) => [phaseTable(r), ratioTable(r), latencyTable(r), notes(r).join('\n')].join('\n\n'),
  ok: (r) => r.clean,
});
