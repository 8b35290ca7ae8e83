/**
 * npm run test:soak: a steady load through gateway -> Kafka -> consumer -> ClickHouse,
 * with the query service read at the same time, for SOAK_SECONDS (default 600).
 *
 * Passes when: no request failed, every acknowledged event is in ClickHouse exactly once
 * as read, every process's memory stayed bounded (its peak RSS in the last third of the
 * run is at most 25% above its peak in the middle third), and consumer lag stayed
 * bounded (below SOAK_EVENTS_PER_SECOND x 10 s, and back near 0 after the load).
 * Writes the figures to RELIABILITY.md (section soak) and prints them as one JSON line.
 */
import { DEFAULT_TENANT } from '@telemetry/contract';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { createClickHouse } from '@telemetry/platform';
import { issueKey, MonitorStore, placeholderMonitor } from '@telemetry/store';
import { provision } from '../../tools/devstack/provision.js';
import { storeEnv } from '../../tools/devstack/users.js';
import { startStack } from '../../tools/devstack/stack.js';
import { errorKind, HttpClient, steadyLoops, type Reply } from '../../harness/load.js';
import {
  Child,
  freePort,
  runSecretBox,
  serviceCommand,
  sleep,
  until,
  type ServiceName,
} from '../../harness/processes.js';
import { RELIABILITY_MD, writeSection } from '../../harness/report.js';
import { envNumber, pipelineTopics, serviceEnv, SMOKE } from '../../harness/run.js';
import { withRegistry } from '../../tools/devstack/postgres.js';

const seconds = envNumber('SOAK_SECONDS', 600, 1, false, 6);
const eventsPerSecond = envNumber('SOAK_EVENTS_PER_SECOND', 10_000, 1, false, 400);
/** How often memory and lag are sampled (thirds of the run are compared). */
const sampleMs = SMOKE ? 1000 : 5000;
const batch = 50;
const loops = 8;
const log = (s: string): boolean => process.stderr.write(`[soak] ${s}\n`);

async function main(): Promise<number> {
  const stack = await startStack();
  const run = randomBytes(3).toString('hex');
  const topics = pipelineTopics(`soak.${run}`);
  const names = { db: `soak_${run}`, ...topics.topics };
  const children: [ServiceName, Child][] = [];
  try {
    const users = await provision(stack, { database: names.db, topics: topics.list, partitions: 6 });
    const admin = createClickHouse({ url: stack.clickhouseUrl, username: 'default', password: '', database: names.db });
    const { access, api } = await withRegistry(users.postgres!.owner, async (db) => {
      const access = (await issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'telemetry', name: 'soak' })).key;
      const api = (await issueKey(db, { tenantId: DEFAULT_TENANT, kind: 'api', name: 'soak', scopes: ['checks:read'] }))
        .key;
      // The readers ask for monitors m0..m199: they must be in the registry (paused: no runner here).
      await new MonitorStore(db, runSecretBox()).saveMany(
        Array.from({ length: 200 }, (_, m) => placeholderMonitor(`m${m}`)),
      );
      return { access, api };
    });
    for (const name of ['ingest-gateway', 'stream-consumer', 'query-service'] as const) {
      const port = await freePort();
      const env = serviceEnv(stack, names.db, port, {
        ...topics.env,
        RATE_LIMIT_PER_SECOND: '0',
        CONSUMER_GROUP_ID: `soak-${run}`,
        ...storeEnv(users, name),
      });
      children.push([
        name,
        new Child({ name, command: serviceCommand(name), env, url: `http://127.0.0.1:${port}` }).start(),
      ]);
    }
    await Promise.all(children.map(([, c]) => c.ready(60_000)));
    const url = Object.fromEntries(children.map(([n, c]) => [n, c.url])) as Record<ServiceName, string>;

    // Some check history for the readers: 200 monitors x 50 checks.
    const kafka = new Kafka({ brokers: stack.kafkaBrokers.split(','), clientId: 'soak', logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const now = Date.now();
    for (let m = 0; m < 200; m++) {
      await producer.send({
        topic: names.checks,
        acks: -1,
        messages: Array.from({ length: 50 }, (_, i) => ({
          key: `m${m}`,
          value: JSON.stringify({
            id: `m${m}-c${i}`,
            monitor_id: `m${m}`,
            status: i % 10 === 0 ? 'down' : 'up',
            response_time: 50 + i,
            status_code: 200,
            created_at: new Date(now - i * 60_000).toISOString(),
          }),
        })),
      });
    }
    await producer.disconnect();

    const writes = new HttpClient(url['ingest-gateway'], loops);
    const readsHttp = new HttpClient(url['query-service'], 4);
    /** The answer's status, or what stood for it (`ECONNRESET`, `timeout`). */
    const statusOf = (reply: Promise<Reply>): Promise<number | string> => reply.then((r) => r.status, errorKind);
    let acked = 0;
    let failed = 0;
    let reads = 0;
    let readFailures = 0;
    /** Failed requests by what they got: `write 503`, `read ECONNRESET`... */
    const failures: Record<string, number> = {};
    const failure = (what: string): void => void (failures[what] = (failures[what] ?? 0) + 1);
    let seq = 0;
    let running = true;
    const source = `soak-${run}`;
    const headers = { 'content-type': 'application/json', 'x-access-key': access };
    const writers = steadyLoops(
      loops,
      (1000 * batch * loops) / eventsPerSecond,
      () => running,
      async () => {
        const events = Array.from({ length: batch }, () => ({
          id: `e${seq++}`,
          source,
          category: 'soak',
          payload: { n: seq },
        }));
        const body = JSON.stringify({ events });
        const status = await statusOf(writes.request('POST', '/api/telemetry/events', headers, body, 10_000));
        if (status === 200) acked += batch;
        else {
          failed += batch;
          failure(`write ${status}`);
        }
      },
    );
    const readers = steadyLoops(
      2,
      20,
      () => running,
      async () => {
        const path = `/api/monitors/m${Math.floor(Math.random() * 200)}/checks?limit=50`;
        const auth = { authorization: `Bearer ${api}` };
        const status = await statusOf(readsHttp.request('GET', path, auth, undefined, 10_000));
        reads++;
        if (status !== 200) {
          readFailures++;
          failure(`read ${status}`);
        }
      },
    );

    const kadmin = kafka.admin();
    await kadmin.connect();
    const lag = async (): Promise<number> => {
      const [ends, committed] = await Promise.all([
        kadmin.fetchTopicOffsets(names.events),
        kadmin.fetchOffsets({ groupId: `soak-${run}`, topics: [names.events] }),
      ]);
      const done = new Map(committed[0]!.partitions.map((p) => [p.partition, Math.max(0, Number(p.offset))]));
      return ends.reduce((n, p) => n + Number(p.high) - (done.get(p.partition) ?? 0), 0);
    };
    const samples: { t: number; rss: Record<string, number>; lag: number }[] = [];
    const started = Date.now();
    while (Date.now() - started < seconds * 1000) {
      await sleep(sampleMs);
      const rss = Object.fromEntries(children.map(([n, c]) => [n, (c.rss.sample() ?? 0) / 1024]));
      samples.push({ t: (Date.now() - started) / 1000, rss, lag: await lag() });
      log(
        `${Math.round(samples.at(-1)!.t)} s: acked ${acked}, failed ${failed}, lag ${samples.at(-1)!.lag}, rss ${JSON.stringify(rss)}`,
      );
    }
    running = false;
    await Promise.all([writers, readers]);
    writes.close();
    readsHttp.close();

    // Catch up, then the oracle.
    let found = 0;
    const count = async (): Promise<number> => {
      const query = `SELECT uniqExact(client_event_id) AS n FROM events WHERE source = '${source}'`;
      return (found = Number(
        (await (await admin.query({ query, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n,
      ));
    };
    await until(
      'every acknowledged event in ClickHouse',
      async () => ((await count()) >= acked ? true : undefined),
      180_000,
      1000,
    ).catch(() => log(`only ${found} of ${acked} events found after 180 s`));
    const rs = await admin.query({
      query: `SELECT count() AS n FROM events FINAL WHERE source = '${source}'`,
      format: 'JSONEachRow',
    });
    const asRead = Number((await rs.json<{ n: string }>())[0]!.n);
    const lagAfter = await lag();
    await kadmin.disconnect();
    await admin.close();

    const third = samples.length / 3;
    const peak = (from: number, to: number, name: string): number =>
      Math.max(...samples.slice(Math.floor(from), Math.ceil(to)).map((s) => s.rss[name] ?? 0));
    const memory = Object.fromEntries(
      children.map(([n]) => [
        n,
        {
          peakMiB: Math.round(peak(0, samples.length, n)),
          middleMiB: Math.round(peak(third, 2 * third, n)),
          lastMiB: Math.round(peak(2 * third, samples.length, n)),
        },
      ]),
    );
    const peakLag = Math.max(...samples.map((s) => s.lag));
    const checks = {
      noErrors: failed === 0 && readFailures === 0,
      nothingLost: found === acked && asRead === acked,
      memoryBounded: Object.values(memory).every((m) => m.lastMiB <= m.middleMiB * 1.25 + 16),
      lagBounded: peakLag < eventsPerSecond * 10 && lagAfter <= batch * loops,
    };
    const figures = {
      smoke: SMOKE,
      seconds,
      eventsPerSecond,
      acked,
      failed,
      found,
      asRead,
      reads,
      readFailures,
      failures,
      peakLag,
      lagAfter,
      memory,
      checks,
      passed: Object.values(checks).every(Boolean),
    };
    if (!SMOKE)
      writeSection(
        RELIABILITY_MD,
        'soak',
        `## Soak\n\nWritten by \`npm run test:soak\` (SOAK_SECONDS=${seconds}, SOAK_EVENTS_PER_SECOND=${eventsPerSecond}) on ${new Date().toISOString().slice(0, 16)}Z, ${stack.mode} Kafka and ClickHouse.\n\n| figure | value |\n|---|---|\n| duration | ${seconds} s |\n| events acknowledged / failed | ${acked} / ${failed} |\n| found in ClickHouse (distinct / as read with FINAL) | ${found} / ${asRead} |\n| check-history reads / failed | ${reads} / ${readFailures} |\n| failed requests by answer | ${
          Object.entries(failures)
            .map(([k, n]) => `${k}: ${n}`)
            .join(', ') || 'none'
        } |\n| peak consumer lag (messages) | ${peakLag} (after the load: ${lagAfter}) |\n${Object.entries(memory)
          .map(
            ([n, m]) =>
              `| ${n} RSS peak / middle third / last third | ${m.peakMiB} / ${m.middleMiB} / ${m.lastMiB} MiB |`,
          )
          .join('\n')}\n| verdict | ${
          figures.passed
            ? 'passed'
            : `FAILED: ${Object.entries(checks)
                .filter(([, v]) => !v)
                .map(([k]) => k)
                .join(', ')}`
        } |`,
        '# Reliability\n\nFigures written by the test suites themselves.\n',
      );
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return figures.passed ? 0 : 1;
  } finally {
    await Promise.all(children.map(([, c]) => c.stop()));
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
