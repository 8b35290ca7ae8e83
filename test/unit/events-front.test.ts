import { request, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { createValidators } from '@telemetry/contract';
import {
  AppError,
  createLogger,
  createRegistry,
  LineCollector,
  OverloadedError,
  type FairPublisher,
  type ProducerMessage,
} from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import { createGatewayApp, eventIdFor, loadGatewayConfig } from '@telemetry/ingest-gateway';
import { servedInFront } from '../../services/ingest-gateway/src/events.route.js';

const GOOD = 'tk_front_unit_good';
const SOURCES = 'tk_front_unit_sources';

function verified(keyId: string, over: Partial<VerifiedKey> = {}): VerifiedKey {
  return {
    keyId,
    tenantId: 'tenant-a',
    name: 'k',
    kind: 'telemetry',
    scopes: new Set(),
    monitorIds: new Set(),
    allowedOrigins: new Set(),
    allowedSources: new Set(),
    ipStorage: 'truncated',
    ...over,
  };
}

/** Publishes into an array; fails the way Kafka or the in-flight limit does when told to. */
class FakePublisher implements FairPublisher {
  sent: ProducerMessage[][] = [];
  fail: Error | undefined;
  send(_topic: string, messages: ProducerMessage[]): Promise<void> {
    if (this.fail !== undefined) return Promise.reject(this.fail);
    this.sent.push(messages);
    return Promise.resolve();
  }
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** Header names in the order they were sent (Date and the connection's own left out). */
  names: string[];
  body: string;
}

const EVENT = { source: 'shop.example', category: 'page_view', payload: { path: '/' } };
const body = (events: unknown[] = [EVENT]): string => JSON.stringify({ events });

/**
 * POST /api/telemetry/events on plain node:http (frontListener) and the same request to
 * the Express app's route (`/api/telemetry/events/`: Express routes a trailing slash to
 * the same route, frontListener leaves it to the app): the same status, headers in the
 * same order and bytes, the same metrics and log lines.
 */
describe('the gateway: POST /api/telemetry/events in front of Express (unit)', () => {
  let server: Server;
  let base: string;
  const publisher = new FakePublisher();
  const lines = new LineCollector();
  const registry = createRegistry('ingest-gateway');

  /** A gateway listener on a port of 127.0.0.1; `env` on top of the defaults. */
  async function listen(
    env: Record<string, string>,
    keyIdOf: (raw: string) => string | undefined,
    registry = createRegistry('ingest-gateway'),
  ): Promise<Server> {
    const config = loadGatewayConfig({
      KAFKA_BROKERS: 'localhost:9092',
      CLICKHOUSE_URL: 'http://localhost:8123',
      DATABASE_URL: 'postgres://svc:pw@localhost:5432/telemetry',
      MAX_BODY_BYTES: String(64 * 1024),
      ...env,
    });
    const listener = createGatewayApp({
      config,
      logger: createLogger({ service: 'test', level: 'info', stream: lines }),
      registry,
      keys: {
        authenticate(raw: string): VerifiedKey {
          if (raw === SOURCES) return verified('key-sources', { allowedSources: new Set(['other.example']) });
          const id = keyIdOf(raw);
          if (id !== undefined) return verified(id);
          throw new AppError('INVALID_CREDENTIALS', 'the access key is not valid');
        },
      },
      heartbeatTokens: { verify: () => undefined },
      eventSchemas: { find: () => undefined, hasTenant: () => false },
      publisher,
      validators: createValidators(),
      ready: () => true,
      details: () => ({}),
      sdk: undefined,
    });
    const s = createServer(listener);
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return s;
  }

  before(async () => {
    server = await listen(
      { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '100000' },
      (raw) => (raw === GOOD ? 'key-good' : undefined),
      registry,
    );
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function send(
    path: string,
    opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
    to = base,
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = request(`${to}${path}`, { method: opts.method ?? 'POST', headers: opts.headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const names: string[] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2) names.push(res.rawHeaders[i]!.toLowerCase());
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            names: names.filter((n) => !['date', 'connection', 'keep-alive'].includes(n)),
            body: Buffer.concat(chunks).toString(),
          });
        });
      });
      req.on('error', reject);
      req.end(opts.body);
    });
  }

  /** The answer of the front route and of the Express route to the same request, after `prepare` before each. */
  async function both(query: string, opts: Parameters<typeof send>[1]): Promise<[Answer, Answer]> {
    const front = await send(`/api/telemetry/events${query}`, opts);
    const app = await send(`/api/telemetry/events/${query}`, opts);
    return [front, app];
  }

  function same(front: Answer, app: Answer): void {
    expect(front.status, front.body).to.equal(app.status);
    expect(front.body).to.equal(app.body);
    expect(front.names).to.deep.equal(app.names);
    // The key's bucket moves between the two requests: its RateLimit figures, not their presence.
    const strip = (h: IncomingHttpHeaders): IncomingHttpHeaders => {
      const { date: _d, 'x-request-id': id, 'ratelimit-remaining': left, 'ratelimit-reset': reset, ...rest } = h;
      expect(id).to.match(/^[0-9a-f-]{36}$|^req-/);
      return { ...rest, left: typeof left, reset: typeof reset };
    };
    expect(strip(front.headers)).to.deep.equal(strip(app.headers));
  }

  const json = { 'content-type': 'application/json', 'x-access-key': GOOD };

  it('serves only the exact target itself; other spellings, methods and targets go to Express', () => {
    expect(servedInFront('POST', '/api/telemetry/events')).to.equal(true);
    expect(servedInFront('POST', '/api/telemetry/events?key=k&return=ids')).to.equal(true);
    for (const url of [
      '/api/telemetry/events/',
      '/API/telemetry/events',
      '/api/telemetry/events#x',
      '/api/telemetry/events?key=a#b',
      '/api/telemetry/events?a b',
      '/api/telemetry/eventsx',
      'http://127.0.0.1/api/telemetry/events',
    ]) {
      expect(servedInFront('POST', url), url).to.equal(false);
    }
    expect(servedInFront('GET', '/api/telemetry/events')).to.equal(false);
    expect(servedInFront('OPTIONS', '/api/telemetry/events')).to.equal(false);
  });

  it('answers an accepted request as Express does: 200, the envelope, RateLimit and CORS headers', async () => {
    const before = publisher.sent.length;
    const [front, app] = await both('', { headers: { ...json, origin: 'http://127.0.0.1:5173' }, body: body() });
    same(front, app);
    expect(front.status).to.equal(200);
    expect(front.body).to.equal('{"success":true,"data":null}');
    expect(front.headers['content-type']).to.equal('application/json; charset=utf-8');
    expect(front.headers['access-control-allow-origin']).to.equal('http://127.0.0.1:5173');
    expect(front.headers['ratelimit-limit']).to.equal('100000');
    expect(front.names).to.deep.equal([
      'x-request-id',
      'access-control-allow-origin',
      'vary',
      'access-control-expose-headers',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
      'content-type',
      'content-length',
    ]);
    expect(publisher.sent.length).to.equal(before + 2);
    const msg = JSON.parse(String(publisher.sent.at(-2)![0]!.value)) as Record<string, unknown>;
    expect(msg).to.include({
      key_id: 'key-good',
      tenant_id: 'tenant-a',
      source: 'shop.example',
      request_ip: '127.0.0.1',
    });
  });

  it('lists the stored ids with ?return=ids, takes ?key= and a gzip body, keeps a safe X-Request-Id', async () => {
    const events = [
      { ...EVENT, id: 'order-1' },
      { ...EVENT, id: 'order-2' },
    ];
    const [front, app] = await both(`?return=ids&key=${GOOD}`, {
      headers: { 'content-type': 'text/plain; charset=utf-8', 'content-encoding': 'gzip', 'x-request-id': 'req-1' },
      body: gzipSync(body(events)),
    });
    same(front, app);
    expect(JSON.parse(front.body)).to.deep.equal({
      success: true,
      data: [eventIdFor('key-good', 'order-1'), eventIdFor('key-good', 'order-2')],
    });
    expect(front.headers['x-request-id']).to.equal('req-1');
    const unsafe = await send('/api/telemetry/events', { headers: { ...json, 'x-request-id': 'a b' }, body: body() });
    expect(unsafe.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });

  it('refuses as Express does, with the same codes, envelopes and headers', async () => {
    const cases: [string, string, Parameters<typeof send>[1]][] = [
      ['MISSING_CREDENTIALS', '', { headers: { 'content-type': 'application/json' }, body: body() }],
      ['INVALID_CREDENTIALS', '', { headers: { ...json, 'x-access-key': 'nope' }, body: body() }],
      [
        'INVALID_CREDENTIALS',
        `?key=${GOOD}&key=${GOOD}`,
        { headers: { 'content-type': 'application/json' }, body: body() },
      ],
      ['INVALID_CREDENTIALS', '?key=other', { headers: json, body: body() }],
      ['UNSUPPORTED_MEDIA_TYPE', '', { headers: { ...json, 'content-type': 'application/xml' }, body: body() }],
      ['UNSUPPORTED_MEDIA_TYPE', '', { headers: { ...json, 'content-encoding': 'br' }, body: body() }],
      ['INVALID_PARAMETER', '?return=all', { headers: json, body: body() }],
      ['INVALID_PARAMETER', '?return=ids&return=ids', { headers: json, body: body() }],
      ['INVALID_JSON', '', { headers: json, body: '' }],
      ['INVALID_JSON', '', { headers: json, body: '{"events":' }],
      ['INVALID_JSON', '', { headers: { ...json, 'content-encoding': 'gzip' }, body: 'not gzip' }],
      ['VALIDATION_FAILED', '', { headers: json, body: body([EVENT, { ...EVENT, source: 'has space' }]) }],
      [
        'BATCH_TOO_LARGE',
        '',
        {
          headers: json,
          body: body(Array.from({ length: 1001 }, () => ({ source: 's', category: 'c', payload: {} }))),
        },
      ],
      ['PAYLOAD_TOO_LARGE', '', { headers: json, body: body([{ ...EVENT, payload: { x: 'x'.repeat(70_000) } }]) }],
      ['SOURCE_NOT_ALLOWED', '', { headers: { ...json, 'x-access-key': SOURCES }, body: body() }],
    ];
    for (const [code, query, opts] of cases) {
      const [front, app] = await both(query, opts);
      same(front, app);
      expect(JSON.parse(front.body), `${code} ${query}`).to.include({ success: false, code });
    }
  });

  it('answers 413 with Connection: close and reads the rest of an over-limit body', async () => {
    const [front, app] = await both('', {
      headers: json,
      body: body([{ ...EVENT, payload: { x: 'x'.repeat(70_000) } }]),
    });
    same(front, app);
    expect(front.status).to.equal(413);
    expect(front.headers.connection).to.equal('close');
  });

  it('answers 429 with Retry-After once a key is over its rate', async () => {
    // One request a second, no burst: a key's second request at once is over.
    const limited = await listen({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '1' }, (raw) =>
      raw.startsWith('tk_limited_') ? raw : undefined,
    );
    try {
      const to = `http://127.0.0.1:${(limited.address() as AddressInfo).port}`;
      const answers: Answer[] = [];
      for (const [path, key] of [
        ['/api/telemetry/events', 'tk_limited_front'],
        ['/api/telemetry/events/', 'tk_limited_app'],
      ] as const) {
        const opts = { headers: { ...json, 'x-access-key': key }, body: body() };
        expect((await send(path, opts, to)).status).to.equal(200);
        answers.push(await send(path, opts, to));
      }
      same(answers[0]!, answers[1]!);
      expect(answers[0]!.status).to.equal(429);
      expect(answers[0]!.headers['retry-after']).to.equal('1');
      expect(answers[0]!.headers['ratelimit-remaining']).to.equal('0');
      expect(JSON.parse(answers[0]!.body)).to.include({ code: 'RATE_LIMITED' });
    } finally {
      await new Promise<void>((resolve) => limited.close(() => resolve()));
    }
  });

  it('answers Kafka and internal failures as Express does, and logs the internal ones', async () => {
    publisher.fail = new OverloadedError();
    const overloaded = await both('', { headers: json, body: body() });
    publisher.fail = new Error('boom: a bug');
    const internal = await both('', { headers: json, body: body() });
    publisher.fail = undefined;
    same(...overloaded);
    expect(overloaded[0].status).to.equal(503);
    expect(overloaded[0].headers['retry-after']).to.equal('1');
    same(...internal);
    expect(internal[0].status).to.equal(500);
    expect(JSON.parse(internal[0].body)).to.deep.equal({
      success: false,
      error: 'internal error',
      code: 'INTERNAL_ERROR',
    });
    const logged = lines.lines
      .filter((l) => l.includes('unhandled error'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged.length).to.be.at.least(2);
    expect(logged.at(-2)).to.include({ path: '/api/telemetry/events', level: 'error' });
    expect(String(logged.at(-2)!.err)).to.contain('boom: a bug');
  });

  it('counts the front route in the app’s HTTP metrics and access log under the route template', async () => {
    const count = async (status: string, code: string): Promise<number> => {
      const m = (await registry.getSingleMetric('http_requests_total')!.get()).values.find(
        (v) =>
          v.labels.route === '/api/telemetry/events' &&
          v.labels.method === 'POST' &&
          v.labels.status === status &&
          v.labels.code === code,
      );
      return m?.value ?? 0;
    };
    const [ok0, bad0] = [await count('200', ''), await count('401', 'MISSING_CREDENTIALS')];
    await send('/api/telemetry/events', { headers: json, body: body() });
    await send('/api/telemetry/events?key=', { headers: { 'content-type': 'application/json' }, body: body() });
    expect(await count('200', '')).to.equal(ok0 + 1);
    expect(await count('401', 'MISSING_CREDENTIALS')).to.equal(bad0 + 1);
    const access = lines.lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.message === 'request' && l.path === '/api/telemetry/events');
    expect(access.at(-1)).to.include({
      method: 'POST',
      route: '/api/telemetry/events',
      status: 401,
      code: 'MISSING_CREDENTIALS',
    });
    expect(access.at(-2)).to.include({ status: 200 });
    expect(access.at(-2)).not.to.have.property('code');
    // The key given in the query never reaches a log line.
    expect(lines.lines.join('\n')).not.to.contain(GOOD);
  });

  it('leaves every other route to Express: the preflight, 405 for another method, the pixel, health', async () => {
    const pre = await send('/api/telemetry/events', {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:5173' },
    });
    expect(pre.status).to.equal(204);
    expect(pre.headers['access-control-allow-methods']).to.equal('POST, GET, OPTIONS');
    const get = await send('/api/telemetry/events', { method: 'GET' });
    expect(get.status).to.equal(405);
    expect(get.headers.allow).to.equal('POST, OPTIONS');
    const pixel = await send(`/api/telemetry/pixel.gif?key=${GOOD}&source=shop.example&category=page_view`, {
      method: 'GET',
    });
    expect(pixel.status).to.equal(200);
    expect(pixel.headers['content-type']).to.equal('image/gif');
    expect((await send('/healthz', { method: 'GET' })).status).to.equal(200);
    expect((await send('/nope', { method: 'POST' })).status).to.equal(404);
  });
});
