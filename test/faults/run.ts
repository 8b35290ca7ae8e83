/**
 * `npm run test:faults`: the fault suite, on real Kafka, real ClickHouse and the real
 * service processes.
 *
 *   1. starts its own local stack (Kafka and ClickHouse processes it can stop and start),
 *      a fresh database and 4-partition topics, a telemetry access key, and the gateway,
 *      the consumer and the query service as child processes on fixed ports;
 *   2. per scenario (scenarios.ts): steady load through the gateway (load.ts), the fault,
 *      the recovery, more load; then waits for the consumer group to commit everything
 *      and checks that every acknowledged event is readable exactly once, that nothing
 *      is read twice, and that every /readyz is 200 again without a manual step;
 *   3. writes the figures to RELIABILITY.md (between `<!-- faults -->` and
 *      `<!-- /faults -->`), prints them as a table and as one JSON object on the last
 *      line of stdout, and exits non-zero when a scenario lost or duplicated an event or
 *      a service did not recover. Everything it started is stopped, even on failure.
 *
 * `--short` or FAULTS_SHORT=1: shorter holds and load. `--smoke` (what `npm test` runs):
 * the short run, and RELIABILITY.md left alone. FAULTS_WRITE=0: leave RELIABILITY.md alone. FAULTS_ONLY=name,name: run only these scenarios. Progress goes
 * to stderr; service logs (and, on failure, the servers' data and logs) stay in the log
 * directory printed at the start. Only 127.0.0.1 is used.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createClickHouse, type ClickHouseClient } from '@telemetry/platform';
import { issueKey, MonitorStore, placeholderMonitor, SCOPES } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { KAFKA_VERSION } from '../../tools/devstack/installers.js';
import { startStack, type Stack } from '../../tools/devstack/stack.js';
import {
  Child,
  freePort,
  RUN_SECRETS_KEYS,
  runSecretBox,
  serviceCommand,
  sleep,
  until,
  type ServiceName,
} from '../../harness/processes.js';
import { RELIABILITY_MD, writeSection } from '../../harness/report.js';
import { pipelineTopics, SMOKE } from '../../harness/run.js';
import { EventBatchLoad, type BatchOutcome } from '../../harness/event-batches.js';
import { allReady, judge, Observer, readiness } from './observe.js';
import { renderSection, type RunFigures, type ScenarioFigures } from './report.js';
import { scenarios, type Ctx, type Scenario, type Timings } from './scenarios.js';
import { withRegistry } from '../../tools/devstack/postgres.js';

const SHORT = process.env.FAULTS_SHORT === '1' || process.argv.includes('--short') || SMOKE;
/** Findings (documented behaviour not met, nothing lost) fail the run too. */
const STRICT = process.env.FAULTS_STRICT === '1';
/** Keep the servers' data and logs even when the run passes. */
const KEEP = process.env.FAULTS_KEEP === '1';

const TIMINGS: Timings = SHORT
  ? {
      loadBeforeMs: 2000,
      loadAfterMs: 2000,
      kafkaHoldMs: 5000,
      clickhouseHoldMs: 8000,
      postgresHoldMs: 5000,
      killHoldMs: 500,
      scaleHoldMs: 2000,
    }
  : {
      loadBeforeMs: 3000,
      loadAfterMs: 3000,
      kafkaHoldMs: 10_000,
      clickhouseHoldMs: 30_000,
      postgresHoldMs: 30_000,
      killHoldMs: 1000,
      scaleHoldMs: 5000,
    };

/** Deadlines: how long we wait for a condition before calling it a failure (not sleeps). */
const DEADLINE = {
  ready: 90_000,
  ackAfterRecovery: 90_000,
  recovery: 180_000,
  caughtUp: 180_000,
  lostRecheck: 15_000,
};

/** 4 loops x 10 events every 100 ms: about 400 events/s. */
const LOAD = { loops: 4, batchSize: 10, intervalMs: 100, requestTimeoutMs: 15_000 };

const log = (line: string): void => {
  process.stderr.write(`[faults ${new Date().toISOString().slice(11, 23)}] ${line}\n`);
};

interface Services {
  gateway: Child;
  consumer: Child;
  query: Child;
  consumer2: Child;
  /** Checks one monitor (the gateway's /healthz) every second: the registry scenario watches it. */
  runner: Child;
}

async function main(): Promise<number> {
  const started = Date.now();
  const run = randomBytes(3).toString('hex');
  const logDir = mkdtempSync(join(tmpdir(), `faults-${run}-`));
  const command = process.env.npm_lifecycle_event
    ? `npm run ${process.env.npm_lifecycle_event}`
    : `tsx test/faults/run.ts${SHORT ? ' --short' : ''}`;
  log(`${SHORT ? 'short' : 'full'} run ${run}; logs in ${logDir}`);

  let stack: Stack | undefined;
  let ch: ClickHouseClient | undefined;
  let services: Services | undefined;
  let ok = false;
  const cleanup = async (): Promise<void> => {
    const s = services;
    if (s) {
      await Promise.all(
        [s.gateway, s.consumer, s.query, s.consumer2, s.runner].map((p) => p.close().catch(() => undefined)),
      );
    }
    await ch?.close().catch(() => undefined);
    await stack?.stop().catch((err: unknown) => log(`stopping the stack failed: ${String(err)}`));
    if (ok && !KEEP) rmSync(join(logDir, 'stack'), { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping everything`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    stack = await startStack({ forceLocal: true, dataDir: join(logDir, 'stack'), keepData: true, log });
    const control = stack.control;
    if (!control) throw new Error('the stack has no controls (local processes are needed)');
    const topics = pipelineTopics(`faults.${run}`);
    const names = { database: `faults_${run}`, events: topics.topics.events, group: `faults-${run}` };
    const users = await provision(stack, { database: names.database, topics: topics.list, partitions: 4 });
    ch = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database: names.database });
    const gatewayPort = await freePort();
    // A telemetry key for the load, an API key for the registry's writes, and one monitor
    // the runner checks (the gateway's health) through every scenario.
    const monitorId = `mon_${randomBytes(8).toString('hex')}`;
    const { key, apiKey } = await withRegistry(users.postgres!.owner, async (db) => {
      const key = (await issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'telemetry', name: 'fault suite' })).key;
      const apiKey = (
        await issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'api', name: 'fault suite', scopes: [...SCOPES] })
      ).key;
      const monitor = {
        ...placeholderMonitor(monitorId, 'gateway health'),
        url: `http://127.0.0.1:${gatewayPort}/healthz`,
        interval_seconds: 1,
        paused: false,
      };
      await new MonitorStore(db, runSecretBox()).saveMany([monitor]);
      return { key, apiKey };
    });
    const chVersion = await clickhouseVersion(ch);
    log(`stack up: kafka ${stack.kafkaBrokers}, clickhouse ${stack.clickhouseUrl} (${chVersion})`);

    const common: Record<string, string> = {
      KAFKA_BROKERS: stack.kafkaBrokers,
      CLICKHOUSE_URL: stack.clickhouseUrl,
      CLICKHOUSE_DATABASE: names.database,
      ...topics.env,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      MIGRATE_ON_START: 'false',
      SECRETS_KEYS: RUN_SECRETS_KEYS,
    };
    // A killed consumer's partitions move after this; the default 30 s only makes the run longer.
    const consumerEnv = { ...common, CONSUMER_GROUP_ID: names.group, CONSUMER_SESSION_TIMEOUT_MS: '10000' };
    const svc = (label: string, name: ServiceName, port: number, env: Record<string, string>) =>
      new Child({
        name: label,
        command: serviceCommand(name),
        env: { ...process.env, ...storeEnv(users, name), ...env, PORT: String(port) },
        url: `http://127.0.0.1:${port}`,
        logFile: join(logDir, `${label}.log`),
      });
    services = {
      gateway: svc('gateway', 'ingest-gateway', gatewayPort, { ...common, KAFKA_ACK_TIMEOUT_MS: '2000' }),
      consumer: svc('consumer', 'stream-consumer', await freePort(), consumerEnv),
      // Monitors may aim at the gateway (the runner's monitor, the registry scenario's writes).
      query: svc('query', 'query-service', await freePort(), { ...common, EGRESS_ALLOW: `127.0.0.1:${gatewayPort}` }),
      consumer2: svc('consumer-2', 'stream-consumer', await freePort(), consumerEnv),
      runner: svc('runner', 'check-runner', await freePort(), {
        ...common,
        RUNNER_ID: `faults-${run}`,
        EGRESS_ALLOW: `127.0.0.1:${gatewayPort}`,
        MIN_INTERVAL_SECONDS: '1',
      }),
    };
    const { gateway, consumer, query, runner } = services;
    await Promise.all([gateway, consumer, query, runner].map((s) => s.start().ready(DEADLINE.ready)));
    log(`services ready: gateway ${gateway.url}, consumer ${consumer.url}, query ${query.url}`);

    const obs = new Observer(ch, names.database, stack.kafkaBrokers, names.events, names.group);
    const only = (process.env.FAULTS_ONLY ?? '').split(',').filter(Boolean);
    const chosen = only.length > 0 ? scenarios.filter((s) => only.includes(s.name)) : scenarios;
    const up = { kafka: true, clickhouse: true, postgres: true };
    const results: ScenarioFigures[] = [];
    const registry = {
      apiKey,
      monitorId,
      checksBetween: (from: number, to: number) => obs.checks(monitorId, from, to),
    };
    for (const scenario of chosen) {
      if (results.some((r) => !r.ok)) await heal(control, up, services);
      results.push(await runScenario(scenario, { run, key, obs, control, up, services, registry }));
      const r = results[results.length - 1]!;
      log(
        `${r.name}: ${r.ok ? 'pass' : 'FAIL'}; sent ${r.sent}, acknowledged ${r.acknowledged}, lost ${r.lost}, ` +
          `duplicated ${r.duplicatedAsRead}, recovery ${r.recoverySeconds ?? '-'} s${r.problems.length > 0 ? `; ${r.problems.join('; ')}` : ''}` +
          `${r.findings.length > 0 ? `; finding: ${r.findings.join('; ')}` : ''}`,
      );
    }

    ok = results.length > 0 && results.every((r) => r.ok);
    const figures: RunFigures = {
      command,
      short: SHORT,
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      machine: machine(chVersion),
      durationSeconds: Math.round((Date.now() - started) / 1000),
      ok,
      logDir,
      scenarios: results,
    };
    const section = renderSection(figures);
    if (process.env.FAULTS_WRITE !== '0' && !SMOKE) writeSection(RELIABILITY_MD, 'faults', section, RELIABILITY_TITLE);
    process.stdout.write(`${section}\n`);
    // Stop everything before the last line, so that the duration covers it too.
    await cleanup();
    services = undefined;
    stack = undefined;
    ch = undefined;
    figures.durationSeconds = Math.round((Date.now() - started) / 1000);
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    if (!ok) log(`FAILED; service logs and the servers' data are kept in ${logDir}`);
    return ok ? 0 : 1;
  } catch (err) {
    log(`run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    log(`service logs and the servers' data are kept in ${logDir}`);
    return 1;
  } finally {
    await cleanup();
  }
}

interface RunCtx {
  run: string;
  key: string;
  obs: Observer;
  control: NonNullable<Stack['control']>;
  up: Ctx['up'];
  services: Services;
  registry: Ctx['registry'];
}

async function runScenario(scenario: Scenario, rc: RunCtx): Promise<ScenarioFigures> {
  const started = Date.now();
  const { gateway, consumer, query, consumer2, runner } = rc.services;
  const source = `faults.${scenario.name}.${rc.run}`;
  const idPrefix = `${scenario.name}-${rc.run}`;
  log(`${scenario.name}: ${scenario.fault}`);
  const load = new EventBatchLoad({ port: gateway.port, key: rc.key, source, idPrefix, ...LOAD });
  const ctx: Ctx = {
    control: rc.control,
    up: rc.up,
    obs: rc.obs,
    gateway,
    consumer,
    query,
    consumer2,
    runner,
    registry: rc.registry,
    extra: [],
    load,
    key: rc.key,
    source,
    idPrefix,
    timings: TIMINGS,
    extraOutcomes: [],
    staleMembers: [],
    background: [],
    notes: [],
    findings: [],
    problems: [],
    log,
  };
  const running = (): Child[] => [gateway, consumer, query, runner, ...ctx.extra];
  const fig: ScenarioFigures = {
    name: scenario.name,
    fault: scenario.fault,
    sent: 0,
    acknowledged: 0,
    failed: 0,
    found: 0,
    lost: 0,
    duplicatedAsRead: 0,
    landedDespiteError: 0,
    finalRows: 0,
    limitOneByRows: 0,
    storedRows: 0,
    unexpected: 0,
    recoverySeconds: null,
    catchUpSeconds: null,
    recovered: false,
    failures: {},
    notes: ctx.notes,
    findings: ctx.findings,
    problems: ctx.problems,
    seconds: 0,
    ok: false,
  };

  let watch: Promise<Recovery> | undefined;
  let loadStopped = false;
  try {
    await until(
      'every service ready before the scenario',
      async () => {
        const r = await readiness(running());
        return allReady(r) ? r : undefined;
      },
      DEADLINE.ready,
    );
    load.start();
    await sleep(TIMINGS.loadBeforeMs);
    log(`${scenario.name}: injecting the fault`);
    await scenario.inject(ctx);
    log(`${scenario.name}: recovering`);
    const liftAt = Date.now();
    const recovering = scenario.recover(ctx);
    watch = watchRecovery(ctx, running, liftAt);
    await recovering;
    await Promise.all([
      sleep(TIMINGS.loadAfterMs),
      until(
        'a request acknowledged after the recovery began',
        () => load.firstAckedSince(liftAt),
        DEADLINE.ackAfterRecovery,
      ),
    ]);
  } catch (err) {
    ctx.problems.push(`scenario error: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await load.stop();
    loadStopped = true;
  }
  const loadEnd = Date.now();

  // Every batch: acknowledged or not, and why not.
  const outcomes: BatchOutcome[] = [...load.outcomes, ...ctx.extraOutcomes];
  const acked = new Set<string>();
  const failed = new Set<string>();
  for (const o of outcomes) {
    for (const id of o.ids) (o.ok ? acked : failed).add(id);
    if (!o.ok) fig.failures[o.kind] = (fig.failures[o.kind] ?? 0) + o.ids.length;
  }
  fig.sent = acked.size + failed.size;
  fig.acknowledged = acked.size;
  fig.failed = failed.size;

  try {
    log(
      `${scenario.name}: load stopped (${fig.sent} events, ${fig.acknowledged} acknowledged); waiting for the consumer`,
    );
    let prevEnd = -1;
    await until(
      'the consumer group to commit every message',
      async () => {
        const p = await rc.obs.progress();
        // Caught up, and the topic's end did not move since the last look (a produce
        // that timed out at the gateway may still land).
        const done = p.uncommitted === 0 && p.end === prevEnd;
        prevEnd = p.end;
        return done ? p : undefined;
      },
      DEADLINE.caughtUp,
      1000,
    );
    fig.catchUpSeconds = Math.round((Date.now() - loadEnd) / 100) / 10;
  } catch (err) {
    ctx.problems.push(err instanceof Error ? err.message : String(err));
  }

  try {
    let counts = await rc.obs.counts(source);
    let verdict = judge(counts, acked, failed);
    if (verdict.lost > 0) {
      // Committed means inserted; look again for a while anyway before calling it lost.
      const deadline = Date.now() + DEADLINE.lostRecheck;
      while (verdict.lost > 0 && Date.now() < deadline) {
        await sleep(1000);
        counts = await rc.obs.counts(source);
        verdict = judge(counts, acked, failed);
      }
    }
    const { lostSample: _l, dupSample: _d, ...figures } = verdict;
    Object.assign(fig, figures, {
      finalRows: counts.finalRows,
      limitOneByRows: counts.limitOneByRows,
      storedRows: counts.storedRows,
    });
    if (verdict.lost > 0) {
      ctx.problems.push(`${verdict.lost} acknowledged events not found, e.g. ${verdict.lostSample.join(', ')}`);
    }
    if (verdict.duplicatedAsRead > 0) {
      ctx.problems.push(
        `${verdict.duplicatedAsRead} event ids read more than once, e.g. ${verdict.dupSample.join(', ')}`,
      );
    }
    if (verdict.unexpected > 0) ctx.problems.push(`${verdict.unexpected} stored event ids were never sent`);
    if (counts.limitOneByRows !== counts.finalRows) {
      ctx.problems.push(`LIMIT 1 BY event_id reads ${counts.limitOneByRows} rows, FINAL ${counts.finalRows}`);
    }
    if (counts.storedRows > counts.finalRows) {
      ctx.notes.push(`${counts.storedRows - counts.finalRows} extra copies stored (hidden on read)`);
    }
  } catch (err) {
    ctx.problems.push(`oracle error: ${err instanceof Error ? err.message : String(err)}`);
  }

  await Promise.all(ctx.background);
  if (watch) {
    const rec = await watch;
    const after = (t: number): number => Math.round((t - rec.liftAt) / 100) / 10;
    if (rec.readyAt !== undefined && rec.visibleAt !== undefined) {
      fig.recoverySeconds = after(Math.max(rec.readyAt, rec.visibleAt));
      ctx.notes.push(
        `from the start of the recovery: every /readyz 200 after ${after(rec.readyAt)} s, ` +
          `the first event acknowledged after it readable after ${after(rec.visibleAt)} s`,
      );
    } else {
      ctx.problems.push(
        `no recovery within ${DEADLINE.recovery / 1000} s: ${rec.readyAt === undefined ? `/readyz ${JSON.stringify(rec.lastReadiness)}` : ''}` +
          `${rec.visibleAt === undefined ? ' no event acknowledged after the recovery began became readable' : ''}`,
      );
    }
  }
  try {
    await until(
      'every service ready after the scenario',
      async () => {
        const r = await readiness(running());
        return allReady(r) ? r : undefined;
      },
      DEADLINE.ready,
    );
    fig.recovered = true;
  } catch {
    ctx.problems.push(`not every service ready again: ${JSON.stringify(await readiness(running()))}`);
  }
  if (!loadStopped) await load.stop();

  fig.seconds = Math.round((Date.now() - started) / 1000);
  fig.ok = fig.recovered && ctx.problems.length === 0 && (!STRICT || ctx.findings.length === 0);
  // Do not leave the second consumer behind after a failure.
  if (consumer2.running) await consumer2.stop('SIGTERM', 40_000);
  return fig;
}

interface Recovery {
  liftAt: number;
  readyAt?: number;
  visibleAt?: number;
  lastReadiness?: Record<string, number | string>;
}

/**
 * From the start of the recovery: when every service answers /readyz 200, and when the
 * first batch acknowledged after that start is readable in ClickHouse (end to end again).
 */
async function watchRecovery(ctx: Ctx, running: () => Child[], liftAt: number): Promise<Recovery> {
  const rec: Recovery = { liftAt };
  const deadline = liftAt + DEADLINE.recovery;
  while (Date.now() < deadline && (rec.readyAt === undefined || rec.visibleAt === undefined)) {
    if (rec.readyAt === undefined) {
      rec.lastReadiness = await readiness(running());
      if (allReady(rec.lastReadiness)) rec.readyAt = Date.now();
    }
    if (rec.visibleAt === undefined) {
      const first = ctx.load.firstAckedSince(liftAt);
      if (first) {
        const n = await ctx.obs.present(ctx.source, first.ids).catch(() => 0);
        if (n === first.ids.length) rec.visibleAt = Date.now();
      }
    }
    await sleep(250);
  }
  return rec;
}

/** After a failed scenario: servers and services back up, the second consumer gone. */
async function heal(control: NonNullable<Stack['control']>, up: Ctx['up'], services: Services): Promise<void> {
  try {
    if (!up.kafka) {
      await control.startKafka();
      up.kafka = true;
    }
    if (!up.clickhouse) {
      await control.startClickHouse();
      up.clickhouse = true;
    }
    if (!up.postgres) {
      await control.startPostgres();
      up.postgres = true;
    }
    if (services.consumer2.running) await services.consumer2.stop('SIGTERM', 40_000);
    for (const s of [services.gateway, services.consumer, services.query, services.runner]) {
      if (!s.running) await s.start().ready(DEADLINE.ready);
    }
  } catch (err) {
    log(`healing after a failure failed: ${String(err)}`);
  }
}

async function clickhouseVersion(ch: ClickHouseClient): Promise<string> {
  const rs = await ch.query({ query: 'SELECT version() AS v', format: 'JSONEachRow' });
  return `ClickHouse ${(await rs.json<{ v: string }>())[0]?.v ?? '?'}`;
}

function machine(chVersion: string): string {
  let os = `Linux ${release()}`;
  if (existsSync('/etc/os-release')) {
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'));
    if (pretty?.[1]) os = `${pretty[1]} (Linux ${release()})`;
  }
  const cpu = cpus();
  return (
    `${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, ${os}, ` +
    `Node ${process.version}, Kafka ${KAFKA_VERSION} and ${chVersion} as local processes, ` +
    `load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the end (other jobs share the machine)`
  );
}

const RELIABILITY_TITLE =
  '# Reliability\n\nWhat the pipeline does under faults, measured by `npm run test:faults` ' +
  '(`test/faults/run.ts`) on real Kafka, real ClickHouse and the real service processes. ' +
  'The section below is rewritten by each run.\n';

// Exit explicitly: client libraries may keep handles open after everything is stopped.
process.exit(await main());
