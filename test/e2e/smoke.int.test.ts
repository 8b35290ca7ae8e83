import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { started } from '../support/background.js';

const run = promisify(execFile);

const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;

/**
 * Every benchmark, the soak and the fault suite in smoke mode (`-- --smoke`: the same code
 * path for seconds, tiny counts, no Markdown written), each as its own process, judged on
 * the JSON object it prints as its last line: a benchmark that no longer starts fails
 * npm test. The benchmarks and the soak use this run's Kafka and ClickHouse (external
 * mode of the stack harness); the fault suite and the cluster start servers of their own.
 *
 * The package.json script's own command (a plain `tsx ...`), run without npm in between: no
 * npm process to start, and the timeout kills the run itself rather than an npm above it.
 */
async function smoke(script: string, timeoutMs: number, external = true): Promise<Record<string, unknown>> {
  const e = process.env;
  const servers = external
    ? {
        KAFKA_BROKERS: e.TEST_KAFKA_BROKERS,
        CLICKHOUSE_URL: e.TEST_CLICKHOUSE_URL,
        CLICKHOUSE_USERS_DIR: e.TEST_CLICKHOUSE_USERS_DIR,
      }
    : {};
  // No BENCH_* or FAULTS_* setting of the caller's: smoke mode chooses its own.
  const env = Object.fromEntries(
    Object.entries({ ...e, ...servers, PATH: `${resolve('node_modules/.bin')}${delimiter}${e.PATH ?? ''}` }).filter(
      ([k]) => !/^(BENCH|FAULTS|SOAK)_/.test(k),
    ),
  );
  const command = scripts[script]?.split(' ') ?? [];
  expect(command[0], `${script} is a plain tsx command in package.json`).to.equal('tsx');
  expect(
    command.every((w) => /^[\w./=-]+$/.test(w)),
    `${script}: ${scripts[script]}`,
  ).to.equal(true);
  let stdout = '';
  try {
    ({ stdout } = await run(resolve('node_modules/.bin/tsx'), [...command.slice(1), '--smoke'], {
      env,
      maxBuffer: 64 * 1024 * 1024,
      timeout: timeoutMs,
    }));
  } catch (err) {
    const x = err as { stdout?: string; stderr?: string; code?: number };
    expect.fail(
      `${script} --smoke exited ${x.code}:\n${(x.stdout ?? '').slice(-3000)}\n${(x.stderr ?? '').slice(-5000)}`,
    );
  }
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

describe('smoke runs of the benchmarks, the soak and the fault suite (real Kafka, ClickHouse, processes)', function () {
  this.timeout(300_000);

  it('bench:registry: both replicas load every key and monitor and see every change; the change feed within 1 s', async () => {
    const r = (await smoke('bench:registry', 120_000)) as {
      ok: boolean;
      config: { keys: number; monitors: number; changes: number };
      before: RegistrySide;
      after: RegistrySide;
    };
    expect(r.ok).to.equal(true);
    for (const side of [r.before, r.after]) {
      expect([side.keys, side.monitors, side.seenKeys, side.seenMonitors]).to.deep.equal([
        r.config.keys,
        r.config.monitors,
        r.config.changes,
        r.config.changes,
      ]);
      expect(side.loadMs).to.be.greaterThan(0);
    }
    // Idle, the previous design reads whole tables; a catch-up of the change feed, one row (the log's head).
    expect(r.before.idle.rowsPerMinute).to.be.greaterThan(r.config.keys);
    expect(r.after.idle.rowsPerMinute).to.be.at.most(r.after.idle.queriesPerMinute);
    expect(r.after.keyRevocationMs.max).to.be.lessThan(1000);
  });

  it('bench:ingest: both servers answer every request 200 and Kafka holds every event', async () => {
    const r = (await smoke('bench:ingest', 240_000)) as {
      ok: boolean;
      clean: boolean;
      scenarios: { gateway: { rps: number }; baseline: { rps: number } }[];
      kafka: { ok: boolean; ackedEvents: number }[];
      targets: { name: string; met: unknown }[];
    };
    expect([r.ok, r.clean]).to.deep.equal([true, true]);
    expect(r.scenarios).to.have.length(3);
    // Issue 48's goals for the gateway, each judged (met: true or false), beside the event schemas' two.
    expect(r.targets.map((t) => t.name).slice(2)).to.deep.equal([
      "gateway, 100-event batches / Kafka's ProducerPerformance",
      'gateway / bare node:http baseline, single events',
      'gateway p99 at half the max rate',
      'gateway peak RSS under load',
    ]);
    for (const t of r.targets) expect(typeof t.met, t.name).to.equal('boolean');
    for (const s of r.scenarios)
      expect(
        [s.gateway.rps, s.baseline.rps].every((x) => x > 0),
        JSON.stringify(s),
      ).to.equal(true);
    for (const k of r.kafka) expect(k.ok && k.ackedEvents > 0, JSON.stringify(k)).to.equal(true);
  });

  /*
   * The fault suite runs on servers of its own (local processes, never the suite's) and
   * mostly waits on them: starting, holding a fault, recovering. It runs alongside the
   * benchmarks below and is judged after them. Nothing here judges a time that sharing the
   * CPU could break: its deadlines are tens of seconds to minutes, and the benchmarks are
   * judged on counts and rows, not speed. The two benchmarks above judge a time (the change
   * feed within 1 s) or fail on a 10 s request timeout at full load, so they run before it
   * starts, alone; so does the cluster smoke (ten servers of its own, whose broker must be
   * back in sync within its deadline): written below, mocha runs it before this block, as it
   * runs a suite's own tests before its nested suites.
   */
  describe('with the fault suite running alongside', function () {
    let faults: () => Promise<Record<string, unknown>>;

    before(function () {
      faults = started(smoke('test:faults', 880_000, false));
    });

    after(async function () {
      // Whatever failed before it, the run does not outlive this block.
      this.timeout(900_000);
      await Promise.allSettled([faults?.()]);
    });

    it('bench:consume: both paths store every event, identical; freshness measured with nothing lost', async () => {
      const r = (await smoke('bench:consume', 280_000)) as {
        ok: boolean;
        config: { events: number };
        ours: { rows: number; rowsPerSecond: number };
        engine: { rows: number };
        check: { identical: boolean };
        freshness: { ackedEvents: number; missingEvents: number; freshnessMs: { p99: number } };
      };
      expect(r.ok).to.equal(true);
      expect([r.ours.rows, r.engine.rows]).to.deep.equal([r.config.events, r.config.events]);
      expect(r.check.identical).to.equal(true);
      expect(r.ours.rowsPerSecond).to.be.greaterThan(0);
      expect(r.freshness.ackedEvents).to.be.greaterThan(0);
      expect(r.freshness.missingEvents).to.equal(0);
      expect(r.freshness.freshnessMs.p99).to.be.a('number');
    });

    it('bench:query: every scenario answered by both paths, every answer with the expected rows', async () => {
      const r = (await smoke('bench:query', 240_000)) as {
        ok: boolean;
        equivalencePairs: number;
        failures: { non2xx: number; badBody: number; errors: number };
        scenarios: { key: string; service: { rps: number }; direct: { rps: number } }[];
        rate: { achievedRps: number }[];
      };
      expect(r.ok).to.equal(true);
      expect(r.equivalencePairs).to.be.greaterThan(0);
      expect(r.scenarios.map((s) => s.key)).to.deep.equal([
        'first_page',
        'deep_page',
        'filtered',
        'summary_hour',
        'summary_day',
      ]);
      for (const s of r.scenarios) expect(s.service.rps > 0 && s.direct.rps > 0, s.key).to.equal(true);
      for (const x of r.rate) expect(x.achievedRps).to.be.greaterThan(0);
      expect([r.failures.non2xx, r.failures.badBody, r.failures.errors]).to.deep.equal([0, 0, 0]);
    });

    it('bench:runner: the runner and the baseline check every monitor, Kafka holds every acknowledged check', async () => {
      const r = (await smoke('bench:runner', 240_000)) as {
        ok: boolean;
        levels: { monitors: number; runner: SideFigures; baseline: SideFigures; kafka: { ok: boolean }[] }[];
      };
      expect(r.ok).to.equal(true);
      for (const l of r.levels) {
        for (const side of [l.runner, l.baseline]) {
          expect(side.checksPerSecond).to.be.greaterThan(0);
          expect(side.monitorsSeen).to.equal(l.monitors);
        }
        expect(l.kafka.every((k) => k.ok)).to.equal(true);
      }
    });

    it('bench:scale: every part measures its curve, every request answered and every event stored', async () => {
      const r = (await smoke('bench:scale', 240_000)) as {
        ok: boolean;
        parts: string[];
        curves: { id: string; series: { key: string }[]; points: { x: number; values: Record<string, number> }[] }[];
        targets: { name: string; met: boolean }[];
      };
      expect(r.targets.filter((t) => !t.met)).to.deep.equal([]);
      expect(r.ok).to.equal(true);
      expect(r.parts).to.deep.equal(['gateway', 'consumer', 'query', 'runner']);
      expect(r.curves.map((c) => c.id)).to.deep.equal([
        'gateway-keys',
        'consumer-processes',
        'query-monitors',
        'runner-monitors',
      ]);
      for (const c of r.curves) expect(c.points.length, c.id).to.be.at.least(2);
      const [gateway, consumer] = r.curves;
      // Every point of these two has a figure for every series.
      for (const c of [gateway!, consumer!])
        for (const p of c.points) expect(Object.keys(p.values), c.id).to.include.members(c.series.map((s) => s.key));
      for (const p of gateway!.points) expect(p.values.eps, `gateway at ${p.x} keys`).to.be.greaterThan(0);
      for (const p of consumer!.points) expect(p.values.rowsPerSecond, `${p.x} consumers`).to.be.greaterThan(0);
    });

    it('test:soak: no failed request, every acknowledged event stored once', async () => {
      const r = (await smoke('test:soak', 240_000)) as {
        acked: number;
        found: number;
        asRead: number;
        reads: number;
        checks: Record<string, boolean>;
      };
      expect(r.acked).to.be.greaterThan(0);
      expect([r.found, r.asRead]).to.deep.equal([r.acked, r.acked]);
      expect(r.reads).to.be.greaterThan(0);
      expect([r.checks.noErrors, r.checks.nothingLost]).to.deep.equal([true, true]);
    });

    it('test:faults (short): loses nothing acknowledged and shows no duplicate in any scenario', async function () {
      this.timeout(900_000);
      const r = (await faults()) as {
        scenarios: { name: string; acknowledged: number; lost: number; duplicatedAsRead: number }[];
      };
      expect(r.scenarios.map((s) => s.name)).to.have.length(6);
      for (const s of r.scenarios) {
        expect(s.acknowledged, s.name).to.be.greaterThan(0);
        expect([s.name, s.lost, s.duplicatedAsRead]).to.deep.equal([s.name, 0, 0]);
      }
    });
  });

  it('test:cluster (smoke): a broker killed under load on three brokers and two shards of two ClickHouse replicas loses nothing, both shards hold events', async function () {
    this.timeout(600_000);
    // Its own cluster of local processes (never the suite's servers), alone.
    const r = (await smoke('test:cluster', 580_000, false)) as {
      ok: boolean;
      monitorChecked: string;
      scenarios: {
        name: string;
        acknowledged: number;
        lost: number;
        duplicatedAsRead: number;
        eventsPerShard: number[];
        ok: boolean;
      }[];
    };
    expect(r.scenarios.map((s) => s.name)).to.deep.equal(['broker-killed']);
    const [s] = r.scenarios;
    expect(s!.acknowledged).to.be.greaterThan(0);
    // Both shards hold events of it (ok also covers the checks on both and one shard per id and monitor).
    expect(s!.eventsPerShard).to.have.length(2);
    expect(Math.min(...s!.eventsPerShard)).to.be.greaterThan(0);
    expect([s!.lost, s!.duplicatedAsRead, s!.ok, r.ok]).to.deep.equal([0, 0, true, true]);
    expect(r.monitorChecked).to.match(/had \d+ checks readable/);
  });
});

interface SideFigures {
  checksPerSecond: number;
  monitorsSeen: number;
}

interface RegistrySide {
  keys: number;
  monitors: number;
  loadMs: number;
  seenKeys: number;
  seenMonitors: number;
  idle: { rowsPerMinute: number; queriesPerMinute: number };
  keyRevocationMs: { max: number };
}
