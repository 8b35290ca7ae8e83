import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { createKafka, createLogger, type ClickHouseClient } from '@telemetry/platform';
import {
  adminClickHouse,
  eventually,
  newKey,
  runConsumer,
  runGateway,
  testStack,
  uid,
  type Running,
  selectCount,
} from '../support/fixtures.js';
import { controllableStack, type ControllableStack } from '../support/faults.js';
import { gauge } from '../../bench/common/report.js';

interface Envelope {
  success: boolean;
  code?: string;
  error?: string;
  data?: unknown;
  details?: { limit?: string; max?: number; invalid_events?: number[]; problems?: { path: string }[] };
}

const event = (source: string, payload: object = {}): object => ({ source, category: 'page_view', payload });

/** Every gateway rule against the running gateway, on real Kafka and ClickHouse. */
describe('ingest gateway (real Kafka and ClickHouse)', () => {
  let gateway: Running;
  let consumer: Running;
  let ch: ClickHouseClient;
  let key: string;
  const url = (): string => `${gateway.url}/api/telemetry/events`;

  async function post(
    body: string | Buffer,
    headers: Record<string, string> = {},
    k = key,
  ): Promise<{ status: number; json: Envelope; headers: Headers }> {
    const r = await fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': k, ...headers },
      body,
    });
    return { status: r.status, json: (await r.json()) as Envelope, headers: r.headers };
  }

  const countSource = (source: string): Promise<number> =>
    selectCount(ch, `SELECT count() AS n FROM ${testStack().database}.events FINAL WHERE source = '${source}'`);

  before(async () => {
    [gateway, consumer] = await Promise.all([runGateway({ RATE_LIMIT_PER_SECOND: '0' }), runConsumer()]);
    ch = adminClickHouse();
    key = await newKey({ kind: 'telemetry', name: 'gateway tests' });
    await eventually('key loaded', async () =>
      (await post(JSON.stringify({ events: [event('warmup')] }))).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([gateway?.stop(), consumer?.stop()]);
    await ch?.close();
  });

  it('answers a CORS preflight without credentials, and echoes the origin on the POST', async () => {
    const pre = await fetch(url(), {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-access-key',
      },
    });
    expect(pre.status).to.equal(204);
    expect(pre.headers.get('access-control-allow-origin')).to.equal('https://shop.example');
    expect(pre.headers.get('access-control-allow-headers')).to.match(/X-Access-Key/i);
    expect(pre.headers.get('access-control-allow-credentials')).to.equal(null);
    const r = await post(JSON.stringify({ events: [event('cors')] }), { origin: 'https://shop.example' });
    expect(r.status).to.equal(200);
    expect(r.headers.get('access-control-allow-origin')).to.equal('https://shop.example');
  });

  it('enforces a key restricted to origins and to sources with 403', async () => {
    const restricted = await newKey({
      kind: 'telemetry',
      name: 'restricted',
      allowedOrigins: ['https://shop.example'],
      allowedSources: ['web'],
    });
    await eventually('restricted key loaded', async () =>
      (await post(JSON.stringify({ events: [event('web')] }), { origin: 'https://shop.example' }, restricted))
        .status === 200
        ? true
        : undefined,
    );
    const wrongOrigin = await post(
      JSON.stringify({ events: [event('web')] }),
      { origin: 'https://evil.example' },
      restricted,
    );
    expect([wrongOrigin.status, wrongOrigin.json.code]).to.deep.equal([403, 'ORIGIN_NOT_ALLOWED']);
    const noOrigin = await post(JSON.stringify({ events: [event('web')] }), {}, restricted);
    expect([noOrigin.status, noOrigin.json.code]).to.deep.equal([403, 'ORIGIN_NOT_ALLOWED']);
    const wrongSource = await post(
      JSON.stringify({ events: [event('web'), event('app')] }),
      { origin: 'https://shop.example' },
      restricted,
    );
    expect([wrongSource.status, wrongSource.json.code]).to.deep.equal([403, 'SOURCE_NOT_ALLOWED']);
    expect(wrongSource.json.details?.invalid_events).to.deep.equal([1]);
  });

  it('lists each event’s stored event_id with ?return=ids: a retry maps to the same id, as stored', async () => {
    const source = uid('ids');
    const body = JSON.stringify({ events: [{ ...event(source), id: 'ord-1042-view' }, event(source)] });
    const plain = await fetch(url(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body: JSON.stringify({ events: [event(source)] }),
    });
    expect(((await plain.json()) as Envelope).data).to.equal(null);
    const first = await fetch(`${url()}?return=ids`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body,
    });
    const again = await fetch(`${url()}?return=ids`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body,
    });
    const [a, b] = [(await first.json()) as Envelope, (await again.json()) as Envelope];
    expect([first.status, again.status]).to.deep.equal([200, 200]);
    const [ids1, ids2] = [a.data as string[], b.data as string[]];
    expect(ids1).to.have.length(2);
    for (const id of [...ids1, ...ids2])
      expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // The event with a client id keeps its id on the retry; the one without gets a new one.
    expect(ids2[0]).to.equal(ids1[0]);
    expect(ids2[1]).not.to.equal(ids1[1]);
    const stored = await eventually('the events stored', async () => {
      const rs = await ch.query({
        query: `SELECT toString(event_id) AS id FROM ${testStack().database}.events
                WHERE source = '${source}' ORDER BY id LIMIT 1 BY event_id`,
        format: 'JSONEachRow',
      });
      const rows = (await rs.json<{ id: string }>()).map((r) => r.id);
      return rows.length === 4 ? rows : undefined;
    });
    expect(stored).to.include.members([...ids1, ...ids2]);
    const wrong = await fetch(`${url()}?return=all`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-key': key },
      body,
    });
    const w = (await wrong.json()) as Envelope;
    expect([wrong.status, w.code]).to.deep.equal([400, 'INVALID_PARAMETER']);
  });

  it('accepts a gzip body, and refuses gzip bombs and unknown encodings', async () => {
    const source = uid('gzip');
    const r = await post(gzipSync(JSON.stringify({ events: [event(source, { big: 'x'.repeat(1000) })] })), {
      'content-encoding': 'gzip',
    });
    expect(r.status).to.equal(200);
    await eventually('gzip row', async () => ((await countSource(source)) === 1 ? true : undefined));

    const bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024, 0x20)); // 20 MiB of spaces, ~20 KiB compressed
    const b = await post(bomb, { 'content-encoding': 'gzip' });
    expect([b.status, b.json.code, b.json.details?.limit]).to.deep.equal([413, 'PAYLOAD_TOO_LARGE', 'maxBodyBytes']);
    const ratio = gzipSync(JSON.stringify({ events: [event('r', { pad: ' '.repeat(900_000) })] }));
    const rr = await post(ratio, { 'content-encoding': 'gzip' });
    expect([rr.status, rr.json.code, rr.json.details?.limit]).to.deep.equal([
      413,
      'PAYLOAD_TOO_LARGE',
      'maxCompressionRatio',
    ]);
    const bad = await post(Buffer.from('not gzip'), { 'content-encoding': 'gzip' });
    expect([bad.status, bad.json.code]).to.deep.equal([400, 'INVALID_JSON']);
    const br = await post('{}', { 'content-encoding': 'br' });
    expect([br.status, br.json.code]).to.deep.equal([415, 'UNSUPPORTED_MEDIA_TYPE']);
  });

  it('answers every over-limit request with 413 naming the limit, and every bad body with 400', async () => {
    const big = await post(JSON.stringify({ events: [event('big', { pad: 'x'.repeat(1024 * 1024) })] }));
    expect([big.status, big.json.code, big.json.details?.limit, big.json.details?.max]).to.deep.equal([
      413,
      'PAYLOAD_TOO_LARGE',
      'maxBodyBytes',
      1024 * 1024,
    ]);
    const many = await post(JSON.stringify({ events: Array.from({ length: 501 }, () => event('many')) }));
    expect([many.status, many.json.code, many.json.details?.limit, many.json.details?.max]).to.deep.equal([
      413,
      'BATCH_TOO_LARGE',
      'maxEventsPerRequest',
      500,
    ]);
    const fat = await post(JSON.stringify({ events: [event('ok'), event('fat', { pad: 'x'.repeat(70_000) })] }));
    expect([fat.status, fat.json.code, fat.json.details?.limit]).to.deep.equal([
      413,
      'EVENT_TOO_LARGE',
      'maxEventBytes',
    ]);
    expect(fat.json.details?.invalid_events).to.deep.equal([1]);

    const deep =
      '{"events":[{"source":"d","category":"c","payload":' + '{"a":'.repeat(40) + '1' + '}'.repeat(40) + '}]}';
    const cases: [string, string][] = [
      [deep, 'VALIDATION_FAILED'],
      ['', 'INVALID_JSON'],
      ['null', 'VALIDATION_FAILED'],
      ['[]', 'VALIDATION_FAILED'],
      ['{"events":[{"source":"s","category":"c","payload":{}}]', 'INVALID_JSON'],
      ['{"events":[]}', 'VALIDATION_FAILED'],
      ['{"events":[{"source":"s","category":"c","payload":null}]}', 'VALIDATION_FAILED'],
      ['{"events":[{"source":"s","category":"c","payload":{},"__proto__":{"x":1}}]}', 'VALIDATION_FAILED'],
    ];
    for (const [body, code] of cases) {
      const r = await post(body);
      expect([r.status, r.json.code], body.slice(0, 60)).to.deep.equal([400, code]);
    }
    const latin1 = await post(Buffer.from([0x7b, 0x22, 0xe9, 0x22, 0x7d]));
    expect([latin1.status, latin1.json.code]).to.deep.equal([400, 'INVALID_JSON']);
    const xml = await post('<x/>', { 'content-type': 'application/xml' });
    expect([xml.status, xml.json.code]).to.deep.equal([415, 'UNSUPPORTED_MEDIA_TYPE']);
    // no Content-Type at all (a Buffer body makes fetch send none)
    const none = await fetch(url(), { method: 'POST', headers: { 'x-access-key': key }, body: Buffer.from('{}') });
    expect(none.status).to.equal(415);
  });

  it('serves the pixel: a no-store 1x1 GIF whatever happens, 200 only when the event is in Kafka', async () => {
    const source = uid('pixel');
    const qs = new URLSearchParams({
      key,
      source,
      category: 'view',
      payload: JSON.stringify({ path: '/home' }),
      id: 'px-1',
    });
    const r = await fetch(`${gateway.url}/api/telemetry/pixel.gif?${qs.toString()}`);
    expect(r.status).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/gif');
    expect(r.headers.get('cache-control')).to.contain('no-store');
    const gif = Buffer.from(await r.arrayBuffer());
    expect(gif.subarray(0, 6).toString()).to.equal('GIF89a');
    await eventually('pixel row', async () => ((await countSource(source)) === 1 ? true : undefined));

    const bad = await fetch(`${gateway.url}/api/telemetry/pixel.gif?key=nope&source=s&category=c`);
    expect([bad.status, bad.headers.get('x-error-code'), bad.headers.get('content-type')]).to.deep.equal([
      401,
      'INVALID_CREDENTIALS',
      'image/gif',
    ]);
    const invalid = await fetch(`${gateway.url}/api/telemetry/pixel.gif?key=${key}&source=s`);
    expect([invalid.status, invalid.headers.get('x-error-code')]).to.deep.equal([400, 'VALIDATION_FAILED']);
    expect(gateway.logs.lines.join('\n')).not.to.contain(key.split('_')[2]!);
  });

  it('rate-limits per key with 429, Retry-After and RateLimit headers', async () => {
    const limited = await runGateway({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '3' });
    try {
      const k = await newKey({ kind: 'telemetry', name: 'rate limited' });
      const send = (): Promise<Response> =>
        fetch(`${limited.url}/api/telemetry/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-access-key': k },
          body: JSON.stringify({ events: [event('rl')] }),
        });
      await eventually('key loaded', async () => ((await send()).status !== 401 ? true : undefined));
      const statuses: number[] = [];
      let last: Response | undefined;
      for (let i = 0; i < 5; i++) {
        last = await send();
        statuses.push(last.status);
      }
      expect(statuses).to.include(429);
      expect(statuses.filter((s) => s === 200).length).to.be.at.most(3);
      expect(last!.status).to.equal(429);
      expect(((await last!.json()) as Envelope).code).to.equal('RATE_LIMITED');
      expect(Number(last!.headers.get('retry-after'))).to.be.at.least(1);
      expect(last!.headers.get('ratelimit-remaining')).to.equal('0');
      expect(last!.headers.get('ratelimit-limit')).to.equal('3');
    } finally {
      await limited.stop();
    }
  });

  it('answers 503 OVERLOADED instead of queueing past the in-flight limit', async () => {
    const tiny = await runGateway({ MAX_INFLIGHT_MESSAGES: '2' });
    try {
      const r = await fetch(`${tiny.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify({ events: [event('o'), event('o'), event('o')] }),
      });
      expect(r.status).to.equal(503);
      expect(r.headers.get('retry-after')).to.equal('1');
      expect(((await r.json()) as Envelope).code).to.equal('OVERLOADED');
    } finally {
      await tiny.stop();
    }
  });

  it('answers 503 OVERLOADED past the in-flight limit in bytes, and accepts what fits', async () => {
    // 1 MiB of messages in flight holds one request of 10 events of 60 KB (about 600 KB of
    // messages), not two; each request's messages wait 1 s for others (the linger), so
    // the first is still in flight when the second comes.
    const tiny = await runGateway({
      MAX_INFLIGHT_BYTES: String(1024 * 1024),
      MAX_EVENTS_PER_REQUEST: '15',
      PRODUCE_LINGER_MS: '1000',
    });
    try {
      const send = (events: object[]) =>
        fetch(`${tiny.url}/api/telemetry/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-access-key': key },
          body: JSON.stringify({ events }),
        });
      const big = Array.from({ length: 10 }, () => event('o', { d: 'x'.repeat(60_000) }));
      const first = send(big);
      await eventually('the first request in flight', async () => {
        const m = await (await fetch(`${tiny.url}/metrics`)).text();
        const bytes = gauge(m, 'ingest_inflight_bytes');
        return bytes > 600_000 ? bytes : undefined;
      });
      const second = await send(big);
      expect(second.status).to.equal(503);
      expect(second.headers.get('retry-after')).to.equal('1');
      expect(((await second.json()) as Envelope).code).to.equal('OVERLOADED');
      expect((await first).status).to.equal(200);
      // Once the first is acknowledged, the same request fits.
      expect((await send(big)).status).to.equal(200);
    } finally {
      await tiny.stop();
    }
  });

  it("splits a request larger than the broker's message size limit over several produce requests", async () => {
    // A one-partition topic whose max.message.bytes (256 KiB) is below this request's
    // events (10 x 60 KB): sent as one produce request, Kafka would refuse it.
    const topic = `${testStack().eventsTopic}.split-${uid()}`;
    const kafka = createKafka({
      brokers: testStack().kafkaBrokers.split(','),
      clientId: 'test',
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '262144' }] }],
      });
      const split = await runGateway({ EVENTS_TOPIC: topic, PRODUCE_MAX_BATCH_BYTES: '200000' });
      const whole = await runGateway({ EVENTS_TOPIC: topic, PRODUCE_MAX_BATCH_BYTES: '100000000' });
      try {
        const source = uid('split');
        const body = JSON.stringify({
          events: Array.from({ length: 10 }, (_, i) => event(source, { i, blob: 'x'.repeat(60_000) })),
        });
        const send = (g: Running) =>
          fetch(`${g.url}/api/telemetry/events`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-access-key': key },
            body,
          });
        await eventually('the key loaded', async () => ((await send(split)).status === 200 ? true : undefined));
        // The same request as one produce request is refused by Kafka: the cap is what helps.
        expect((await send(whole)).status).to.equal(413);
        const offsets = await admin.fetchTopicOffsets(topic);
        expect(offsets.map((o) => o.high)).to.deep.equal(['10']);
      } finally {
        await Promise.all([split.stop(), whole.stop()]);
      }
    } finally {
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
    }
  });

  it('counts requests by route, status and code in /metrics', async () => {
    const m = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(m).to.match(
      /http_requests_total\{route="\/api\/telemetry\/events",method="POST",status="413",code="PAYLOAD_TOO_LARGE"[^}]*\} [1-9]/,
    );
    expect(m).to.match(/kafka_produce_duration_seconds_count\{[^}]*\} [1-9]/);
    expect(m).to.contain('ingest_inflight_messages');
  });
});

describe('ingest gateway while Kafka is down (real Kafka, stopped and restarted)', () => {
  let faults: ControllableStack;
  let gateway: Running;
  let key: string;

  before(async () => {
    faults = await controllableStack();
    gateway = await runGateway({ ...faults.env, KAFKA_ACK_TIMEOUT_MS: '1500' });
    key = await newKey({ kind: 'telemetry', name: 'kafka down' });
  });

  after(async () => {
    await faults.control.startKafka().catch(() => undefined);
    await gateway?.stop();
    await faults?.release();
  });

  it('answers 503 with Retry-After (never 2xx) while Kafka is down, and 200 again once it is back', async function () {
    this.timeout(120_000);
    const send = async (): Promise<{ status: number; code?: string; retryAfter: string | null }> => {
      const r = await fetch(`${gateway.url}/api/telemetry/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-key': key },
        body: JSON.stringify({ events: [event('kd')] }),
      });
      return { status: r.status, code: ((await r.json()) as Envelope).code, retryAfter: r.headers.get('retry-after') };
    };
    await eventually('accepted before the fault', async () => ((await send()).status === 200 ? true : undefined));
    await faults.control.stopKafka();
    const during: { status: number; code?: string; retryAfter: string | null }[] = [];
    for (let i = 0; i < 4; i++) during.push(await send());
    for (const r of during) {
      expect(r.status, JSON.stringify(during)).to.equal(503);
      expect(r.code).to.equal('KAFKA_UNAVAILABLE');
      expect(r.retryAfter).to.equal('1');
    }
    await faults.control.startKafka();
    await eventually(
      'accepted after Kafka is back',
      async () => ((await send()).status === 200 ? true : undefined),
      60_000,
    );
    expect((await fetch(`${gateway.url}/readyz`)).status).to.equal(200);
  });
});

describe('ingest gateway shutdown (a real process, SIGTERM)', () => {
  it('stops keep-alive clients from holding it open: answers what is in flight, exits 0 within seconds', async function () {
    this.timeout(90_000);
    const { spawnService } = await import('../support/processes.js');
    const { Agent, request } = await import('node:http');
    const gw = await spawnService('ingest-gateway');
    const key = await newKey({ kind: 'telemetry', name: 'shutdown' });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const port = Number(new URL(gw.url).port);
    const send = (): Promise<{ status: number; connection: string | undefined }> =>
      new Promise((resolve) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/api/telemetry/events',
            agent,
            headers: { 'content-type': 'application/json', 'x-access-key': key },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
          },
        );
        req.on('error', () => resolve({ status: 0, connection: undefined }));
        req.end(JSON.stringify({ events: [event('shutdown')] }));
      });
    await eventually('key loaded', async () => ((await send()).status === 200 ? true : undefined));
    const started = Date.now();
    const exited = new Promise<number | null>((r) => gw.child.once('exit', (code) => r(code)));
    gw.child.kill('SIGTERM');
    const after: { status: number; connection: string | undefined }[] = [];
    for (let i = 0; i < 20 && gw.child.exitCode === null; i++) after.push(await send());
    const code = await exited;
    agent.destroy();
    expect(code).to.equal(0);
    expect(Date.now() - started, 'exits well before SHUTDOWN_TIMEOUT_MS').to.be.lessThan(10_000);
    // Requests that reached it before the signal was handled are answered; the first
    // answer after it closes the connection, and nothing more is taken on it.
    const served = after.filter((a) => a.status === 200);
    expect(served.length).to.be.at.most(3);
    if (served.length > 0) expect(served.at(-1)!.connection).to.equal('close');
    expect(after.slice(served.length).every((a) => a.status === 0)).to.equal(true);
    expect(gw.output()).not.to.contain('shutdown deadline passed');
  });
});
