/**
 * `BENCH_RUNNER_SCENARIO=browser npm run bench:runner`: what a browser check costs
 * (docs/browser-checks.md) and how many one runner completes per minute.
 *
 *   1. a loopback sign-in site in this process (form → 303 with a cookie → welcome page);
 *   2. a fresh database and topics; BENCH_BROWSER_MONITORS (10) browser monitors, each
 *      signing in with 4 steps (fill, fill, click, assert_text), every BENCH_BROWSER_INTERVAL_SECONDS
 *      (15) with timeout_ms 15000 (a check may wait for a browser that long and still run):
 *      about as many as the pool can run, so it stays busy;
 *   3. one check runner compiled (dist/main.js) with RUNNER_CHROMIUM_PATH=/usr/bin/chromium
 *      and RUNNER_BROWSER_CONCURRENCY (2); once the first check is published, warm-up
 *      (10 s), then a window of BENCH_BROWSER_SECONDS (60);
 *   4. CPU from /proc (utime + stime) of the runner and, apart, of its Chromium processes
 *      (every descendant), and their memory (PSS from smaps_rollup, sampled each second);
 *      checks from the runner's runner_checks_total;
 *   5. writes the bench:runner:browser section of BENCHMARKS.md (BENCH_WRITE=1).
 * Only 127.0.0.1 is used.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createLogger, sqlIdentifier } from '@telemetry/platform';
import { MonitorStore } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { withRegistry } from '../../tools/devstack/postgres.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { Child, freePort, metricSum, runSecretBox, serviceCommand, sleep, until } from '../../harness/processes.js';
import { fmt, markdown, sectionHead, table } from '../../harness/report.js';
import { Benchmark, benchMonitor, envNumber, pipelineTopics, serviceEnv } from '../../harness/run.js';
import { adminClickHouse } from '../common/stack.js';

const bench = new Benchmark('bench:runner:browser');
const log = bench.log;
const MONITORS = envNumber('BENCH_BROWSER_MONITORS', 10, 1, true);
const INTERVAL_SECONDS = envNumber('BENCH_BROWSER_INTERVAL_SECONDS', 15, 1, true);
const SECONDS = envNumber('BENCH_BROWSER_SECONDS', 60, 5, true, 10);
const CONCURRENCY = envNumber('RUNNER_BROWSER_CONCURRENCY', 2, 1, true);
const WARMUP_SECONDS = 10;
/** Long enough that a check waiting for a browser still runs: the window counts what the pool completes. */
const TIMEOUT_MS = Math.min(15_000, INTERVAL_SECONDS * 1000);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TICK = 100; // USER_HZ on Linux

interface BrowserReport {
  command: string;
  date: string;
  machine: Awaited<ReturnType<typeof bench.stack>>['machine'];
  config: {
    monitors: number;
    intervalSeconds: number;
    timeoutMs: number;
    seconds: number;
    concurrency: number;
    steps: number;
  };
  checks: { up: number; down: number; perMinute: number; offeredPerMinute: number; skipped: number };
  cpu: { runnerMsPerCheck: number; chromiumMsPerCheck: number; runnerPercent: number; chromiumPercent: number };
  memory: { runnerPssMiB: number; chromiumPssMiB: number; chromiumProcesses: number };
  ok: boolean;
}

/** The sign-in site the monitors visit (loopback, in this process: its CPU is not the runner's). */
function site(): Promise<{ port: number; close(): void }> {
  const page = (body: string) => `<!doctype html><title>Shop</title><style>body{font:16px sans-serif}</style>${body}`;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://site');
    if (url.pathname === '/login' && req.method === 'POST') {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        const user = new URLSearchParams(body).get('user') ?? '';
        res.writeHead(303, { location: '/welcome', 'set-cookie': `session=${user}; Path=/` }).end();
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    if (url.pathname === '/welcome') {
      const user = /session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1] ?? 'nobody';
      return res.end(page(`<h1>Welcome, ${user}</h1><p>Your orders, your account.</p>`));
    }
    res.end(
      page(
        '<h1>Sign in</h1><form method="post" action="/login"><input name="user"><input name="password" type="password"><button id="submit">Sign in</button></form>',
      ),
    );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as { port: number }).port, close: () => server.close() }),
    ),
  );
}

/** Every process under `root` (children, grandchildren, …), from /proc. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [child, pp] of parent) {
      if (pp === p) {
        out.push(child);
        walk(child);
      }
    }
  };
  walk(root);
  return out;
}

/** utime + stime of `pid` in ms (0 when gone). */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / TICK;
  } catch {
    return 0;
  }
}

/** Proportional set size of `pid` in MiB (0 when gone). */
function pssMiB(pid: number): number {
  try {
    const kb = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1];
    return Number(kb ?? 0) / 1024;
  } catch {
    return 0;
  }
}

async function main(cleanups: Parameters<Parameters<typeof bench.run>[0]>[0]): Promise<BrowserReport> {
  const logDir = mkdtempSync(join(tmpdir(), 'bench-runner-browser-'));
  const { stack, machine } = await bench.stack(cleanups);
  const admin = adminClickHouse(cleanups, stack);
  const target = await site();
  cleanups.push(() => Promise.resolve(target.close()));
  const prefix = `bench_browser_${randomBytes(4).toString('hex')}`;
  const topics = pipelineTopics(prefix);
  const logger = createLogger({ service: 'bench-runner-browser', level: 'warn', stream: process.stderr });
  const users = await provision(stack, { database: prefix, topics: topics.list, partitions: 6, logger });
  const now = new Date().toISOString();
  const steps = [
    { action: 'fill' as const, selector: 'input[name=user]', value: 'alice' },
    { action: 'fill' as const, selector: 'input[type=password]', value: '{{password}}' },
    { action: 'click' as const, selector: '#submit' },
    { action: 'assert_text' as const, text: 'Welcome, alice' },
  ];
  const list = Array.from({ length: MONITORS }, (_, i) =>
    benchMonitor(i, () => `http://127.0.0.1:${target.port}/`, now, {
      type: 'browser',
      interval_seconds: INTERVAL_SECONDS,
      timeout_ms: TIMEOUT_MS,
      browser_steps: steps,
      variables: { password: 'bench-secret' },
    }),
  );
  await withRegistry(users.postgres!.owner, (db) => new MonitorStore(db, runSecretBox()).saveMany(list));
  log(`${MONITORS} browser monitors every ${INTERVAL_SECONDS} s; database ${prefix}; logs in ${logDir}`);

  const port = await freePort();
  const runner = new Child({
    name: 'check-runner',
    command: serviceCommand('check-runner', true),
    env: serviceEnv(stack, prefix, port, {
      ...topics.env,
      ...storeEnv(users, 'check-runner'),
      EGRESS_ALLOW: '127.0.0.1/32',
      RUNNER_GROUP_ID: `${prefix}-runners`,
      WEBHOOK_GROUP_ID: `${prefix}-webhooks`,
      RUNNER_ID: 'bench-browser',
      RUNNER_CHROMIUM_PATH: CHROMIUM,
      RUNNER_BROWSER_CONCURRENCY: String(CONCURRENCY),
    }),
    url: `http://127.0.0.1:${port}`,
    logFile: join(logDir, 'runner.log'),
  });
  cleanups.push(() => runner.close());
  await runner.start().ready(90_000);
  const pid = runner.pid;
  await until(
    () => `a first browser check; see ${runner.logFile}`,
    async () => (metricSum(await runner.metrics(), 'runner_checks_total') > 0 ? true : undefined),
    90_000,
    500,
  );
  log(`first check published; warming up ${WARMUP_SECONDS} s`);
  await sleep(WARMUP_SECONDS * 1000);

  const counts = async () => {
    const m = await runner.metrics();
    return {
      up: metricSum(m, 'runner_checks_total', 'status="up"') + metricSum(m, 'runner_checks_total', 'status="degraded"'),
      all: metricSum(m, 'runner_checks_total'),
      skipped: metricSum(m, 'runner_checks_skipped_total'),
    };
  };
  const cpu = () => {
    const kids = descendants(pid);
    return { runner: cpuMs(pid), chromium: kids.reduce((s, p) => s + cpuMs(p), 0) };
  };
  const before = await counts();
  const cpu0 = cpu();
  const started = Date.now();
  let peakRunner = 0;
  let peakChromium = 0;
  let processes = 0;
  log(`measuring ${SECONDS} s`);
  while (Date.now() - started < SECONDS * 1000) {
    await sleep(1000);
    const kids = descendants(pid);
    processes = Math.max(processes, kids.length);
    peakRunner = Math.max(peakRunner, pssMiB(pid));
    peakChromium = Math.max(
      peakChromium,
      kids.reduce((s, p) => s + pssMiB(p), 0),
    );
  }
  const cpu1 = cpu();
  const after = await counts();
  const elapsed = (Date.now() - started) / 1000;
  await runner.stop();
  await admin.command({ query: `DROP DATABASE IF EXISTS ${sqlIdentifier(prefix)}` }).catch(() => undefined);

  const up = after.up - before.up;
  const all = after.all - before.all;
  const runnerCpu = cpu1.runner - cpu0.runner;
  const chromiumCpu = cpu1.chromium - cpu0.chromium;
  return {
    ...bench.head(machine),
    // This scenario runs as bench:runner with BENCH_RUNNER_SCENARIO=browser (and the BENCH_ settings used).
    command: bench.head(machine).command.replace('npm run bench:runner:browser', 'npm run bench:runner'),
    config: {
      monitors: MONITORS,
      intervalSeconds: INTERVAL_SECONDS,
      timeoutMs: TIMEOUT_MS,
      seconds: SECONDS,
      concurrency: CONCURRENCY,
      steps: steps.length,
    },
    checks: {
      up,
      down: all - up,
      perMinute: (up * 60) / elapsed,
      offeredPerMinute: (MONITORS * 60) / INTERVAL_SECONDS,
      skipped: after.skipped - before.skipped,
    },
    cpu: {
      // Per completed check: a check that never got a browser costs next to nothing.
      runnerMsPerCheck: up > 0 ? runnerCpu / up : NaN,
      chromiumMsPerCheck: up > 0 ? chromiumCpu / up : NaN,
      runnerPercent: (runnerCpu / (elapsed * 1000)) * 100,
      chromiumPercent: (chromiumCpu / (elapsed * 1000)) * 100,
    },
    memory: { runnerPssMiB: peakRunner, chromiumPssMiB: peakChromium, chromiumProcesses: processes },
    ok: up > 0,
  };
}

function render(r: BrowserReport): string {
  return markdown([
    ...sectionHead('bench:runner, browser checks', r),
    '',
    `One check runner (compiled, \`RUNNER_BROWSER_CONCURRENCY=${r.config.concurrency}\`, Debian's Chromium) and ` +
      `${r.config.monitors} browser monitors every ${r.config.intervalSeconds} s (${fmt(r.checks.offeredPerMinute)} ` +
      `checks a minute asked for, timeout_ms ${r.config.timeoutMs}: a check may wait that long for a browser), each opening a loopback sign-in page ` +
      `and running ${r.config.steps} steps (fill, fill, click → a 303 with a cookie → the welcome page, assert_text). ` +
      `A ${r.config.seconds} s window after a 10 s warm-up; CPU from /proc (utime + stime), memory as PSS ` +
      '(smaps_rollup, the peak of 1 s samples; shared pages counted once).',
    '',
    table(
      ['figure', 'value'],
      [
        ['browser checks completed (up) per minute', fmt(r.checks.perMinute, 1)],
        ['checks in the window: up / not up', `${r.checks.up} / ${r.checks.down}`],
        ['slots skipped (the previous check of the monitor still running or queued)', r.checks.skipped],
        ['CPU per completed check: runner (Node)', `${fmt(r.cpu.runnerMsPerCheck)} ms`],
        ['CPU per completed check: Chromium (all its processes)', `${fmt(r.cpu.chromiumMsPerCheck)} ms`],
        [
          'CPU over the window: runner / Chromium',
          `${fmt(r.cpu.runnerPercent)} % / ${fmt(r.cpu.chromiumPercent)} % of one core`,
        ],
        ['memory: runner (PSS, peak)', `${fmt(r.memory.runnerPssMiB)} MiB`],
        [
          `memory: Chromium (PSS, peak, ${r.memory.chromiumProcesses} processes)`,
          `${fmt(r.memory.chromiumPssMiB)} MiB`,
        ],
      ],
    ),
  ]);
}

await bench.run(main, {
  render,
  tables: (r) => render(r),
  ok: (r) => r.ok,
});
