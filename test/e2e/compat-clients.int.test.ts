import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ClickHouseClient } from '@telemetry/platform';
import { createTenant } from '@telemetry/store';
import {
  adminClickHouse,
  adminRegistry,
  collectTopic,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { RecordingProxy, type Exchange } from '../support/recording-proxy.js';
import { runClient, type ClientArgs, type ClientRun, type RunOptions } from '../support/sdk-clients.js';
import { ensurePythonSdks } from '../support/python-sdks.js';
import {
  CLIENTS,
  copiesTagged,
  rowsTagged,
  seconds,
  type ClientSpec,
  type EventRow,
} from '../support/compat-clients.js';

/**
 * The trackers' own server-side SDKs (docs/compat.md: @segment/analytics-node,
 * segment-analytics-python, posthog-node, posthog for Python, at their pinned versions),
 * unchanged and with their default flush settings (only the host and the key set), each in
 * a process of its own, against the real gateway, Kafka, consumer and ClickHouse. A
 * RecordingProxy in front of the gateway shows what each sent and can lose one answer.
 */
describe('the trackers’ server-side SDKs (real SDKs, gateway, Kafka and ClickHouse)', function () {
  this.timeout(120_000);
  let gateway: Running;
  let consumer: Running;
  let proxy: RecordingProxy;
  let ch: ClickHouseClient;
  let kafka: { values: unknown[]; stop(): Promise<void> };
  const db = () => testStack().database;
  const A = { tenant: '', key: '' };
  const B = { tenant: '', key: '' };

  before(async function () {
    // pip installs the Python SDKs once (about a minute); later runs reuse the venv.
    this.timeout(600_000);
    await ensurePythonSdks();
    for (const [t, name] of [
      [A, 'tenant A'],
      [B, 'tenant B'],
    ] as const) {
      t.tenant = (await createTenant(adminRegistry(), `${name} ${uid()}`)).tenant_id;
      t.key = await newKey({ tenantId: t.tenant, kind: 'telemetry', name: `${name} trackers` });
    }
    [gateway, consumer] = await Promise.all([runGateway(), runConsumer()]);
    proxy = new RecordingProxy(gateway.url);
    await proxy.start();
    ch = adminClickHouse();
    kafka = await collectTopic(testStack().eventsTopic);
  });

  after(async () => {
    await Promise.all([proxy?.stop(), gateway?.stop(), consumer?.stop(), kafka?.stop()]);
    await ch?.close();
  });

  /** Runs the client through the proxy; returns its report and the exchanges it made. */
  async function send(
    c: ClientSpec,
    args: Partial<ClientArgs> & { tag: string },
    opts: RunOptions = {},
  ): Promise<{ run: ClientRun; seen: Exchange[]; t0: number; t1: number }> {
    const from = proxy.seen.length;
    const t0 = Date.now();
    const run = await runClient(c.script, { host: proxy.url, key: A.key, mode: 'events', ...args }, opts);
    const t1 = Date.now();
    return { run, seen: proxy.seen.slice(from), t0, t1 };
  }

  /** The client's three events, once each, as read. */
  function all(c: ClientSpec, tag: string): Promise<EventRow[]> {
    const n = c.events(tag).length;
    return eventually(`${n} events of ${tag} in ClickHouse`, async () => {
      const rows = await rowsTagged(ch, db(), tag);
      return rows.length >= n ? rows : undefined;
    });
  }

  /** Kafka messages of `tag` (the consumer's input: every copy the gateway accepted). */
  const inKafka = (tag: string): unknown[] => kafka.values.filter((v) => JSON.stringify(v).includes(tag));

  for (const c of CLIENTS) {
    describe(c.name, () => {
      it('sends track, identify and page (or their PostHog equivalents) with its defaults; each is stored once, mapped as docs/compat.md says', async () => {
        const tag = uid('basic');
        const { run, seen, t0, t1 } = await send(c, { tag });
        expect(run.errors, run.stderr).to.deep.equal([]);
        const batches = seen.filter((e) => c.batch.test(`${e.method} ${e.path}`));
        expect(batches.map((e) => e.status)).to.deep.equal([200]);
        // The SDK's only request is its batch (no settings, flags or decide calls).
        expect(seen.map((e) => `${e.method} ${e.path}`)).to.deep.equal(batches.map((e) => `${e.method} ${e.path}`));
        if (c.gzip) expect(batches[0]!.headers['content-encoding']).to.equal('gzip');

        const rows = await all(c, tag);
        const expected = c.events(tag);
        expect(rows).to.have.length(expected.length);
        for (const e of expected) {
          const id = run.ids[e.what];
          expect(id, `${e.what}'s id`).to.be.a('string');
          const row = rows.find((r) => r.client_event_id === id);
          expect(row, `${e.what} stored under its ${c.protocol === 'segment' ? 'messageId' : 'uuid'} ${id}`).to.exist;
          const payload = JSON.parse(row!.payload) as Record<string, unknown>;
          expect({
            tenant_id: row!.tenant_id,
            protocol: row!.protocol,
            category: row!.category,
            source: row!.source,
            anonymous_id: row!.anonymous_id,
            user_id: row!.user_id,
          }).to.deep.equal({
            tenant_id: A.tenant,
            protocol: c.protocol,
            category: e.category,
            source: c.source,
            anonymous_id: e.anonymous_id,
            user_id: e.user_id,
          });
          // The payload is the message as sent: its id and the properties (or traits) the program gave.
          expect(payload[c.protocol === 'segment' ? 'messageId' : 'uuid']).to.equal(id);
          expect(JSON.stringify(payload)).to.include(`"tag":"${tag}"`);
          // client_ts is the SDK's own time of the event; the clock is right, so event_time is it too.
          expect(row!.client_ts).to.equal(seconds(c.clientTime(payload)));
          expect(row!.client_ts).to.be.within(Math.floor(t0 / 1000) - 1, Math.ceil(t1 / 1000) + 1);
          expect(row!.sent_at).to.be.within(row!.client_ts!, Math.ceil(t1 / 1000) + 1);
          expect(row!.event_time).to.be.within(row!.client_ts! - 2, row!.client_ts! + 2);
          expect(row!.received_at).to.be.within(Math.floor(t0 / 1000) - 1, Math.ceil(t1 / 1000) + 1);
        }
        if (!c.gzip) {
          const body = JSON.parse(batches[0]!.body) as Record<string, unknown>;
          const sentAt = String(body.sentAt ?? body.sent_at);
          for (const r of rows) expect(r.sent_at).to.equal(seconds(sentAt));
        }
      });

      it('a batch whose answer is lost (503 after the gateway took it) is retried by the SDK itself and read once', async () => {
        const tag = uid('retry');
        proxy.failNext = c.batch;
        const { run, seen } = await send(c, { tag });
        expect(proxy.failNext, 'the SDK sent its batch').to.equal(undefined);
        const batches = seen.filter((e) => c.batch.test(`${e.method} ${e.path}`));
        // The gateway accepted the first attempt (Kafka has it), the SDK saw 503 and sent it again.
        expect(batches.map((e) => [e.gatewayStatus ?? e.status, e.status])).to.deep.equal([
          [200, 503],
          [200, 200],
        ]);
        expect(
          run.errors.filter((e) => !c.retryLog?.test(e)),
          run.stderr,
        ).to.deep.equal([]);
        const n = c.events(tag).length;
        // Both copies of every event went through Kafka to the consumer...
        await eventually(`${2 * n} copies of ${tag} in Kafka`, () => (inKafka(tag).length >= 2 * n ? true : undefined));
        expect(inKafka(tag)).to.have.length(2 * n);
        // ...and each is read once: FINAL and the distinct event ids agree; the table stored the
        // copies (a background merge may already have folded some).
        const rows = await all(c, tag);
        expect(rows.map((r) => r.client_event_id).sort()).to.deep.equal(Object.values(run.ids).sort());
        const counts = await eventually('the copies stored', async () => {
          const k = await copiesTagged(ch, db(), tag);
          return k.distinct === n ? k : undefined;
        });
        expect(counts.asRead).to.equal(n);
        expect(counts.stored, 'rows stored, copies included').to.be.within(n, 2 * n);
      });

      it('a client clock an hour behind (faketime in its own process) lands at the right time', async () => {
        const tag = uid('clock');
        const { run, t0, t1 } = await send(c, { tag }, { clockOffset: '-1h' });
        expect(run.errors, run.stderr).to.deep.equal([]);
        // The SDK's own clock was an hour behind...
        expect(seconds(run.startedAt)).to.be.within(Math.floor(t0 / 1000) - 3602, Math.ceil(t1 / 1000) - 3598);
        const rows = await all(c, tag);
        expect(rows).to.have.length(c.events(tag).length);
        for (const r of rows) {
          // ...so client_ts and sent_at are, while event_time is when it really happened.
          expect(r.client_ts).to.be.within(Math.floor(t0 / 1000) - 3602, Math.ceil(t1 / 1000) - 3598);
          expect(r.sent_at! - r.client_ts!).to.be.within(0, 5);
          expect(r.event_time).to.be.within(Math.floor(t0 / 1000) - 2, Math.ceil(t1 / 1000) + 2);
          expect(r.received_at - r.event_time).to.be.within(0, 5);
        }
      });

      it('a key of tenant B lands in tenant B only', async () => {
        const tagB = uid('tenant-b');
        const tagA = uid('tenant-a');
        await Promise.all([send(c, { tag: tagB, key: B.key }), send(c, { tag: tagA, key: A.key })]);
        const [rowsB, rowsA] = await Promise.all([all(c, tagB), all(c, tagA)]);
        expect(rowsB.map((r) => r.tenant_id)).to.deep.equal(rowsB.map(() => B.tenant));
        expect(rowsA.map((r) => r.tenant_id)).to.deep.equal(rowsA.map(() => A.tenant));
        expect(rowsB).to.have.length(c.events(tagB).length);
        expect(rowsA).to.have.length(c.events(tagA).length);
      });

      it('an oversized message gets the protocol’s error (or the SDK refuses it itself) and nothing of it is stored', async () => {
        const tag = uid('big');
        const { run, seen } = await send(c, { tag, mode: 'oversized', bytes: c.oversized.bytes });
        const batches = seen.filter((e) => c.batch.test(`${e.method} ${e.path}`));
        if (c.oversized.refusedLocally) {
          // The SDK checks the size itself and sends nothing.
          expect(run.errors.join('\n')).to.match(c.oversized.refusedLocally);
          expect(batches).to.deep.equal([]);
        } else {
          // It sends it; the gateway refuses it; the SDK reports that (and does not retry it).
          expect(batches.map((e) => e.status)).to.deep.equal([c.oversized.status]);
          expect(run.errors.join('\n'), 'the SDK reports the refusal').to.match(new RegExp(String(c.oversized.status)));
          // posthog-node logs the answer's body itself (its body is gzip: the test does not replay it).
          if (c.gzip) expect(run.stderr, run.stderr).to.match(c.oversized.answer);
        }
        const local = c.oversized.refusedWhen;
        if (local) {
          // What its own check refuses: it says so and sends nothing.
          const refused = await send(c, { tag, mode: 'oversized', bytes: local.bytes, text: local.text });
          expect(refused.run.errors.join('\n')).to.match(local.error);
          expect(refused.seen).to.deep.equal([]);
        }
        // What the gateway answers to this SDK's own request shape: a batch it sent and the
        // gateway accepted, replayed with one oversized message, then with a small one.
        if (!c.gzip) {
          const sent = await send(c, { tag: uid('shape') });
          const shape = sent.seen.find((e) => c.batch.test(`${e.method} ${e.path}`) && e.status === 200);
          if (!shape) throw new Error(`${c.name} sent no batch the gateway accepted: ${sent.run.stderr}`);
          const replay = async (t: string, bytes: number): Promise<Response> => {
            const body = JSON.parse(shape.body) as { batch: Record<string, unknown>[] };
            const id = c.protocol === 'segment' ? 'messageId' : 'uuid';
            body.batch = [
              {
                ...body.batch[0],
                [id]: randomUUID(),
                properties: { tag: t, blob: randomBytes(bytes).toString('base64').slice(0, bytes) },
              },
            ];
            const headers = Object.entries(shape.headers).filter(
              ([h]) => !['host', 'content-length', 'connection', 'x-retry-count'].includes(h),
            );
            return fetch(`${gateway.url}${shape.path}`, {
              method: 'POST',
              headers: Object.fromEntries(headers) as Record<string, string>,
              body: JSON.stringify(body),
            });
          };
          const big = await replay(tag, c.oversized.bytes);
          const answer = await big.text();
          expect(big.status, answer).to.equal(c.oversized.status);
          expect(answer).to.match(c.oversized.answer);
          const small = uid('small');
          expect((await replay(small, 10)).status).to.equal(200);
          await eventually(`the small replay ${small} stored`, async () =>
            (await rowsTagged(ch, db(), small)).length === 1 ? true : undefined,
          );
        }
        expect(await rowsTagged(ch, db(), tag)).to.deep.equal([]);
        expect(inKafka(tag)).to.deep.equal([]);
      });
    });
  }
});
