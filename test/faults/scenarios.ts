/**
 * The faults, one scenario each. Every scenario injects its fault while the load runs,
 * holds it, and starts the recovery; run.ts does the rest (load, oracle, figures) the
 * same way for all of them.
 */
import { connect } from 'node:net';
import type { Stack } from '../../tools/devstack/stack.js';
import { sleep, until, type Child } from '../../harness/processes.js';
import { SlowRequests, type BatchOutcome, type EventBatchLoad } from '../../harness/event-batches.js';
import { metricSum, readiness, type Observer } from './observe.js';

export interface Timings {
  /** Load before the fault, and after the recovery. */
  loadBeforeMs: number;
  loadAfterMs: number;
  kafkaHoldMs: number;
  clickhouseHoldMs: number;
  postgresHoldMs: number;
  /** Between the SIGKILL of the consumer and its restart. */
  killHoldMs: number;
  /** How long two consumers share the group. */
  scaleHoldMs: number;
}

export interface Ctx {
  control: NonNullable<Stack['control']>;
  /** Whether this run believes Kafka / ClickHouse are running (to heal after a failure). */
  up: { kafka: boolean; clickhouse: boolean; postgres: boolean };
  obs: Observer;
  gateway: Child;
  consumer: Child;
  query: Child;
  /** The second consumer of consumer-scale (its port is fixed for the run). */
  consumer2: Child;
  /** Checks the registry's one monitor every second. */
  runner: Child;
  /** The registry's side of the run: an API key that may write, the runner's monitor, its stored checks. */
  registry: { apiKey: string; monitorId: string; checksBetween(fromMs: number, toMs: number): Promise<number> };
  /** Services that run in addition to the three (consumer-2 while it is in the group). */
  extra: Child[];
  load: EventBatchLoad;
  key: string;
  source: string;
  idPrefix: string;
  timings: Timings;
  /** Batches sent outside the load generator (the in-flight requests of gateway-sigterm). */
  extraOutcomes: BatchOutcome[];
  /** Members of the consumer group before the fault (they must be gone after the recovery). */
  staleMembers: string[];
  /** Observations still running when the scenario's steps are done (awaited before the figures). */
  background: Promise<void>[];
  notes: string[];
  /** Behaviour that contradicts the docs without losing or duplicating data (FAULTS_STRICT=1 fails on it). */
  findings: string[];
  problems: string[];
  log(line: string): void;
}

export interface Scenario {
  name: string;
  fault: string;
  /** Injects the fault and holds it; resolves when the recovery should begin. */
  inject(ctx: Ctx): Promise<void>;
  /** Begins the recovery (synchronously up to its first await) and resolves when it is done. */
  recover(ctx: Ctx): Promise<void>;
}

/** POST /api/monitors on the query service: its status and error code. */
async function createMonitor(ctx: Ctx): Promise<{ status: number; code?: string }> {
  const r = await fetch(`${ctx.query.url}/api/monitors`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.registry.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'made during the faults', url: `${ctx.gateway.url}/healthz`, paused: true }),
    signal: AbortSignal.timeout(15_000),
  });
  const body = (await r.json().catch(() => ({}))) as { code?: string };
  return { status: r.status, code: body.code };
}

const secondsSince = (t: number): number => Math.round((Date.now() - t) / 100) / 10;

export const scenarios: Scenario[] = [
  {
    name: 'kafka-restart',
    fault: 'Kafka broker stopped (SIGTERM), held, restarted',
    async inject(ctx) {
      ctx.staleMembers = (await ctx.obs.group()).memberIds;
      const t = Date.now();
      await ctx.control.stopKafka();
      ctx.up.kafka = false;
      ctx.notes.push(`broker stopped in ${secondsSince(t)} s, held ${ctx.timings.kafkaHoldMs / 1000} s`);
      await sleep(ctx.timings.kafkaHoldMs);
    },
    async recover(ctx) {
      const t = Date.now();
      await ctx.control.startKafka();
      ctx.up.kafka = true;
      ctx.notes.push(`broker answering again ${secondsSince(t)} s after its restart`);
      ctx.background.push(watchGroup(ctx, Date.now(), true));
    },
  },
  {
    name: 'clickhouse-outage',
    fault: 'ClickHouse stopped (SIGTERM), held, restarted',
    async inject(ctx) {
      const retries = await metricSum(ctx.consumer.url, 'consumer_insert_retries_total');
      ctx.notes.push(`insert retries before: ${retries}`);
      const t = Date.now();
      await ctx.control.stopClickHouse();
      ctx.up.clickhouse = false;
      ctx.notes.push(
        `ClickHouse stopped ${secondsSince(t)} s after its SIGTERM (the stack harness sends SIGKILL at 15 s), ` +
          `then held down ${ctx.timings.clickhouseHoldMs / 1000} s`,
      );
      await sleep(ctx.timings.clickhouseHoldMs);
      const during = await readiness([ctx.gateway, ctx.consumer, ctx.query]);
      ctx.notes.push(`/readyz during the outage: ${JSON.stringify(during)}`);
    },
    async recover(ctx) {
      const t = Date.now();
      await ctx.control.startClickHouse();
      ctx.up.clickhouse = true;
      ctx.notes.push(`ClickHouse answering again ${secondsSince(t)} s after its restart`);
      const retries = await until(
        'the consumer metrics',
        () => metricSum(ctx.consumer.url, 'consumer_insert_retries_total'),
        30_000,
      );
      ctx.notes.push(`insert retries after: ${retries}`);
    },
  },
  {
    name: 'postgres-outage',
    fault: 'PostgreSQL (the registry) stopped (fast shutdown), held, restarted',
    async inject(ctx) {
      const t = Date.now();
      await ctx.control.stopPostgres();
      ctx.up.postgres = false;
      const stoppedAt = Date.now();
      ctx.notes.push(`PostgreSQL stopped in ${secondsSince(t)} s, held ${ctx.timings.postgresHoldMs / 1000} s`);
      // A registry write answers 503 REGISTRY_UNAVAILABLE (and changes nothing).
      const write = await createMonitor(ctx);
      ctx.notes.push(`a monitor write during the outage: ${write.status} ${write.code ?? ''}`);
      if (write.status !== 503 || write.code !== 'REGISTRY_UNAVAILABLE') {
        ctx.problems.push(
          `a write during the outage answered ${write.status} ${write.code}, not 503 REGISTRY_UNAVAILABLE`,
        );
      }
      await sleep(Math.max(0, ctx.timings.postgresHoldMs - (Date.now() - stoppedAt)));
      const during = await readiness([ctx.gateway, ctx.consumer, ctx.query, ctx.runner]);
      ctx.notes.push(`/readyz during the outage: ${JSON.stringify(during)}`);
      // The runner went on checking from its copy of the registry.
      const checks = await until(
        "the outage's checks in ClickHouse",
        async () => {
          const n = await ctx.registry.checksBetween(stoppedAt + 1000, Date.now() - 1000);
          return n > 0 ? n : undefined;
        },
        30_000,
      ).catch(() => 0);
      ctx.notes.push(`checks of the runner's monitor made during the outage: ${checks}`);
      if (checks === 0) ctx.problems.push('the runner made no check while PostgreSQL was down');
    },
    async recover(ctx) {
      const t = Date.now();
      await ctx.control.startPostgres();
      ctx.up.postgres = true;
      ctx.notes.push(`PostgreSQL answering again ${secondsSince(t)} s after its restart`);
      const ok = await until(
        'a monitor write accepted after PostgreSQL is back',
        async () => ((await createMonitor(ctx)).status === 201 ? true : undefined),
        60_000,
      ).catch(() => false);
      if (ok) ctx.notes.push(`a monitor write accepted ${secondsSince(t)} s after the restart`);
      else ctx.problems.push('no monitor write accepted within 60 s of the restart');
    },
  },
  {
    name: 'consumer-sigkill',
    fault: 'consumer killed with SIGKILL during an insert, restarted',
    async inject(ctx) {
      const before = await metricSum(ctx.consumer.url, 'consumer_rows_written_total');
      await until(
        'the consumer writing rows of this scenario',
        async () => ((await metricSum(ctx.consumer.url, 'consumer_rows_written_total')) > before ? true : undefined),
        30_000,
        50,
      );
      // Mid-batch: kill it the moment one of its INSERTs is running in ClickHouse.
      const deadline = Date.now() + 20_000;
      let caught = false;
      ctx.staleMembers = (await ctx.obs.group()).memberIds;
      while (!caught && Date.now() < deadline) caught = (await ctx.obs.insertsRunning()) > 0;
      ctx.consumer.signal('SIGKILL');
      const exit = await ctx.consumer.waitExit(10_000);
      // Offsets cannot move after the kill: this is what the next consumer must read again.
      const after = await ctx.obs.progress();
      ctx.notes.push(
        `killed (${exit.signal}) ${caught ? 'while one of its INSERTs was running in ClickHouse (system.processes)' : 'without catching an INSERT in progress within 20 s'}, ` +
          `with ${after.uncommitted} messages past the group's last commit`,
      );
      await sleep(ctx.timings.killHoldMs);
    },
    async recover(ctx) {
      const t = Date.now();
      ctx.background.push(watchGroup(ctx, t));
      await ctx.consumer.start().ready();
    },
  },
  {
    name: 'gateway-sigterm',
    fault: 'gateway sent SIGTERM with requests in flight, restarted on the same port',
    async inject(ctx) {
      // Requests certainly inside the gateway: headers and half the body sent.
      const slow = new SlowRequests({
        port: ctx.gateway.port,
        key: ctx.key,
        source: ctx.source,
        idPrefix: ctx.idPrefix,
        batchSize: 10,
        requestTimeoutMs: 60_000,
      });
      slow.open(5);
      await sleep(500); // time for the gateway to accept them and read their headers
      const signalledAt = Date.now();
      ctx.gateway.signal('SIGTERM');
      await sleep(300); // the gateway is draining: its listener is closed
      const newConnection = await probeConnection(ctx.gateway.port);
      const answers = await slow.finish();
      ctx.extraOutcomes.push(...answers);
      const exit = await ctx.gateway.waitExit(40_000);
      const exitedAt = Date.now();
      const rel = (t: number): string => `${((t - signalledAt) / 1000).toFixed(2)} s`;

      const inFlight = ctx.load.outcomes.filter((o) => o.start < signalledAt && o.end >= signalledAt);
      ctx.notes.push(
        `in flight at the signal: 5 slow requests (${answers.map((a) => a.kind).join(', ')}) and ` +
          `${inFlight.length} of the load (${inFlight.map((o) => o.kind).join(', ') || '-'}); ` +
          `a new connection 0.3 s after the signal: ${newConnection}`,
      );
      const unanswered = [...answers, ...inFlight.filter((o) => o.start < signalledAt - 50)].filter(
        (o) => !/^\d/.test(o.kind),
      );
      if (unanswered.length > 0) {
        ctx.problems.push(
          `${unanswered.length} requests in flight at the SIGTERM got no answer: ${unanswered.map((a) => a.kind).join(', ')}`,
        );
      }
      const notAcked = answers.filter((a) => !a.ok);
      if (notAcked.length > 0) {
        ctx.problems.push(
          `in-flight requests answered but not acknowledged: ${notAcked.map((a) => a.kind).join(', ')}`,
        );
      }

      // What the draining gateway did with requests that came after the signal.
      const during = ctx.load.outcomes.filter((o) => o.start >= signalledAt && o.start < exitedAt);
      const servedWhileDraining = during.filter((o) => /^\d/.test(o.kind) && o.end <= exitedAt);
      const cut = during.filter((o) => !/^\d/.test(o.kind) && o.kind !== 'ECONNREFUSED');
      const deadlinePassed = ctx.gateway.output().includes('shutdown deadline passed');
      ctx.notes.push(
        `the gateway exited with code ${exit.code} ${rel(exitedAt)} after the signal` +
          `${exit.forced ? ' (SIGKILL after 40 s)' : ''}${deadlinePassed ? ', through its shutdown deadline ("shutdown deadline passed", component http)' : ''}; ` +
          `while draining it answered ${servedWhileDraining.length} new requests on kept-alive connections ` +
          `(${summarize(servedWhileDraining)})` +
          (cut.length > 0
            ? `, and ${cut.length} cut without an answer (${cut.map((o) => `${o.kind} sent at ${rel(o.start)}, failed at ${rel(o.end)}`).join('; ')})`
            : ''),
      );
      if (exit.forced || exit.code !== 0) {
        ctx.problems.push(`the gateway did not exit cleanly on SIGTERM (code ${exit.code}, signal ${exit.signal})`);
      }
      const raced = cut.filter((o) => o.kind === 'ECONNRESET reused' && o.start - signalledAt < 50);
      if (!deadlinePassed && cut.length > 0 && raced.length === cut.length) {
        // The keep-alive race every HTTP server has: the client sent on an idle connection
        // as the gateway closed it. Nothing was read, so nothing was acknowledged or lost.
        ctx.notes.push(
          `${raced.length} request${raced.length === 1 ? '' : 's'} sent on an idle kept-alive connection ` +
            `within 50 ms of the signal, as the gateway closed it (reset before any answer: not acknowledged, ` +
            `for the client to send again)`,
        );
      } else if (deadlinePassed || cut.length > 0) {
        ctx.findings.push(
          `graceful shutdown of the gateway is held open by keep-alive clients: after SIGTERM it kept answering new ` +
            `requests on existing connections until SHUTDOWN_TIMEOUT_MS, then exited through the deadline ` +
            `(${rel(exitedAt)})${cut.length > 0 ? `, cutting ${cut.length} request${cut.length === 1 ? '' : 's'} it had accepted` : ''}`,
        );
      }
    },
    async recover(ctx) {
      await ctx.gateway.start().ready();
    },
  },
  {
    name: 'consumer-scale',
    fault: 'a second consumer added to the group, then removed with SIGTERM (1 -> 2 -> 1)',
    async inject(ctx) {
      const t = Date.now();
      await ctx.consumer2.start().ready();
      ctx.extra.push(ctx.consumer2);
      await until(
        'two members in a stable group',
        async () => {
          const g = await ctx.obs.group();
          return g.state === 'Stable' && g.members === 2 ? g : undefined;
        },
        90_000,
        500,
      );
      ctx.notes.push(`group stable with 2 members ${secondsSince(t)} s after the second consumer started`);
      await sleep(ctx.timings.scaleHoldMs);
      const consumed = await metricSum(ctx.consumer2.url, 'consumer_messages_total');
      ctx.notes.push(`consumer-2 consumed ${consumed} messages while in the group`);
    },
    async recover(ctx) {
      ctx.extra = ctx.extra.filter((s) => s !== ctx.consumer2);
      const t = Date.now();
      const exit = await ctx.consumer2.stop('SIGTERM', 40_000);
      ctx.notes.push(
        `consumer-2 exited with code ${exit.code} ${secondsSince(t)} s after SIGTERM${exit.forced ? ' (SIGKILL after the deadline)' : ''}`,
      );
      if (exit.code !== 0 || exit.forced) {
        ctx.problems.push(`consumer-2 did not shut down cleanly on SIGTERM (code ${exit.code}, signal ${exit.signal})`);
      }
      await until(
        'one member in a stable group',
        async () => {
          const g = await ctx.obs.group();
          return g.state === 'Stable' && g.members === 1 ? g : undefined;
        },
        90_000,
        500,
      );
      ctx.notes.push(`group stable with 1 member ${secondsSince(t)} s after the SIGTERM`);
    },
  },
];

/**
 * How the consumer group gets back to one stable member that is not one of the members
 * from before the fault: the states and member counts it goes through (a member that
 * died without leaving the group stays in it until its session times out). With
 * `sameMemberMayStay`, one stable member of any age ends the watch: a consumer that lived
 * through a broker restart may keep its member id (@platformatic/kafka rejoins with it;
 * kafkajs joins again as a new member).
 */
async function watchGroup(ctx: Ctx, from: number, sameMemberMayStay = false): Promise<void> {
  const seen: string[] = [];
  let last = '';
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const g = await ctx.obs.group().catch(() => undefined);
    if (g) {
      const stale = g.memberIds.filter((id) => ctx.staleMembers.includes(id)).length;
      const now = `${g.state} with ${g.members} member${g.members === 1 ? '' : 's'} (${stale} from before the fault)`;
      if (now !== last) seen.push(`${now} at ${secondsSince(from)} s`);
      last = now;
      const fresh = !ctx.staleMembers.includes(g.memberIds[0]!);
      if (g.state === 'Stable' && g.members === 1 && (fresh || sameMemberMayStay)) break;
    }
    await sleep(500);
  }
  ctx.notes.push(`consumer group after the restart: ${seen.join(', then ') || 'not observed'}`);
}

function summarize(outcomes: BatchOutcome[]): string {
  const by = new Map<string, number>();
  for (const o of outcomes) by.set(o.kind, (by.get(o.kind) ?? 0) + 1);
  return [...by].map(([k, n]) => `${n} × ${k}`).join(', ') || 'none';
}

/** What a new connection to `port` gets right now: `accepted` or the error code. */
async function probeConnection(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve('accepted');
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}
