import { request, type Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import type { Request, Response } from 'express';
import {
  AppError,
  createExpressApp,
  errorHandler,
  KafkaUnavailableError,
  type ProducerMessage,
} from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import {
  corsFor,
  SEGMENT_BATCH_ROUTES,
  SEGMENT_LIMITS,
  SEGMENT_SINGLE_ROUTES,
  segmentRoutes,
  type GatewayConfig,
  type Intake,
} from '@telemetry/ingest-gateway';
import { silentLogger } from './support/fakes.js';

/** Our own Intake, small: keys by raw key, an origin check, a switch for the rate limit and for Kafka. */
class FakeIntake implements Intake {
  published: ProducerMessage[] = [];
  limited = false;
  kafkaDown = false;
  calls = 0;
  constructor(private readonly keys: Record<string, VerifiedKey>) {}

  authenticate(raw: string | undefined, req: Request, _res: Response): VerifiedKey {
    this.calls += 1;
    if (!raw) throw new AppError('MISSING_CREDENTIALS', 'no key');
    const key = this.keys[raw];
    if (!key) throw new AppError('INVALID_CREDENTIALS', 'unknown key');
    const origin = req.get('origin');
    if (key.allowedOrigins.size > 0 && (!origin || !key.allowedOrigins.has(origin))) {
      throw new AppError('ORIGIN_NOT_ALLOWED', 'origin');
    }
    if (this.limited) throw new AppError('RATE_LIMITED', 'slow down', undefined, { 'Retry-After': '7' });
    return key;
  }

  publish(_key: VerifiedKey, messages: ProducerMessage[]): Promise<void> {
    if (this.kafkaDown) return Promise.reject(new KafkaUnavailableError());
    this.published.push(...messages);
    return Promise.resolve();
  }
}

const key = (keyId: string, allowedOrigins: string[] = []): VerifiedKey => ({
  keyId,
  tenantId: `tenant-${keyId}`,
  name: keyId,
  kind: 'telemetry',
  scopes: new Set(),
  monitorIds: new Set(),
  allowedOrigins: new Set(allowedOrigins),
  allowedSources: new Set(),
  ipStorage: 'truncated',
});

const basic = (user: string): string => `Basic ${Buffer.from(`${user}:`).toString('base64')}`;

describe('segment: the HTTP Tracking API routes (fake Intake)', () => {
  let server: Server;
  let base: string;
  let intake: FakeIntake;

  before(async () => {
    intake = new FakeIntake({ tk_a: key('a'), tk_o: key('o', ['https://shop.example']) });
    const app = createExpressApp();
    const config = { maxBodyBytes: 1024 * 1024, maxGzipRatio: 200, maxEventsPerRequest: 500 } as GatewayConfig;
    segmentRoutes(app, { config, logger: silentLogger, intake, cors: corsFor(600) });
    app.use(errorHandler(silentLogger));
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    intake.published = [];
    intake.limited = false;
    intake.kafkaDown = false;
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    });
  const stored = () => intake.published.map((m) => JSON.parse(String(m.value)) as Record<string, unknown>);
  const track = (extra: Record<string, unknown> = {}) => ({
    type: 'track',
    event: 'Signed Up',
    userId: 'u1',
    messageId: `m-${Math.random()}`,
    ...extra,
  });

  it('accepts each type on its long and short path, answering our envelope', async () => {
    const bodies: Record<string, Record<string, unknown>> = {
      track: { event: 'E', userId: 'u' },
      identify: { userId: 'u' },
      page: { anonymousId: 'a' },
      screen: { anonymousId: 'a' },
      group: { userId: 'u', groupId: 'g' },
      alias: { userId: 'u', previousId: 'p' },
    };
    for (const [path, type] of Object.entries(SEGMENT_SINGLE_ROUTES)) {
      const res = await post(path, bodies[type], { Authorization: basic('tk_a') });
      expect(res.status, path).to.equal(200);
      expect(await res.json()).to.deep.equal({ success: true, data: null });
    }
    expect(stored().map((m) => m.category)).to.deep.equal(
      Object.values(SEGMENT_SINGLE_ROUTES).map((t) => (t === 'track' ? 'E' : t)),
    );
    for (const path of SEGMENT_BATCH_ROUTES) {
      const res = await post(path, { batch: [track()], writeKey: 'tk_a' });
      expect(res.status, path).to.equal(200);
    }
    expect(
      stored()
        .slice(-3)
        .every((m) => m.protocol === 'segment' && m.tenant_id === 'tenant-a'),
    ).to.equal(true);
  });

  it("takes analytics.js's text/plain with the key in both places, and answers its preflight", async () => {
    const res = await post(
      '/v1/t',
      { ...track(), writeKey: 'tk_a' },
      {
        'Content-Type': 'text/plain',
        Authorization: basic('tk_a'),
        Origin: 'https://page.example',
      },
    );
    expect(res.status).to.equal(200);
    expect(res.headers.get('access-control-allow-origin')).to.equal('https://page.example');
    const pre = await fetch(`${base}/v1/b`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://page.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(pre.status).to.equal(204);
    const allowed = (pre.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const h of ['content-type', 'authorization', 'x-retry-count']) expect(allowed).to.include(h);
  });

  it('reads gzip bodies', async () => {
    const res = await post('/v1/batch', gzipSync(JSON.stringify({ batch: [track(), track()] })), {
      Authorization: basic('tk_a'),
      'Content-Encoding': 'gzip',
    });
    expect(res.status).to.equal(200);
    expect(intake.published).to.have.length(2);
  });

  it('answers 401 for no key, an unknown key and two different keys; 403 for another origin', async () => {
    const cases: [Record<string, unknown>, Record<string, string>, number, string][] = [
      [{ batch: [track()] }, {}, 401, 'MISSING_CREDENTIALS'],
      [{ batch: [track()] }, { Authorization: basic('tk_nope') }, 401, 'INVALID_CREDENTIALS'],
      [{ batch: [track()], writeKey: 'tk_o' }, { Authorization: basic('tk_a') }, 401, 'INVALID_CREDENTIALS'],
      [{ batch: [track({ writeKey: 'tk_o' })], writeKey: 'tk_a' }, {}, 401, 'INVALID_CREDENTIALS'],
      [
        { batch: [track()] },
        { Authorization: basic('tk_o'), Origin: 'https://evil.example' },
        403,
        'ORIGIN_NOT_ALLOWED',
      ],
    ];
    for (const [body, headers, status, code] of cases) {
      const res = await post('/v1/batch', body, headers);
      expect(res.status, code).to.equal(status);
      expect(((await res.json()) as { code: string }).code).to.equal(code);
    }
    expect(intake.published).to.have.length(0);
  });

  it('checks a key in Authorization before reading the body, once per request (one rate-limit token)', async () => {
    intake.calls = 0;
    let res = await post('/v1/batch', '{not json', { Authorization: basic('tk_unknown') });
    expect(res.status).to.equal(401);
    intake.limited = true;
    res = await post('/v1/batch', '{not json', { Authorization: basic('tk_a') });
    expect(res.status).to.equal(429);
    intake.limited = false;
    intake.calls = 0;
    res = await post('/v1/batch', { batch: [track()], writeKey: 'tk_a' }, { Authorization: basic('tk_a') });
    expect(res.status).to.equal(200);
    expect(intake.calls).to.equal(1);
    res = await post('/v1/batch', { batch: [track()], writeKey: 'tk_o' }, { Authorization: basic('tk_a') });
    expect(res.status).to.equal(401);
    expect(stored()).to.have.length(1);
  });

  it('answers 400 in our envelope for bad JSON, invalid messages and both size limits, storing nothing', async () => {
    const auth = { Authorization: basic('tk_a') };
    const big = 'x'.repeat(SEGMENT_LIMITS.maxMessageBytes);
    const cases: [string, unknown, string][] = [
      ['/v1/batch', '{"batch": [', 'INVALID_JSON'],
      ['/v1/batch', { batch: [track(), { type: 'track', userId: 'u' }] }, 'VALIDATION_FAILED'],
      ['/v1/batch', { batch: [] }, 'VALIDATION_FAILED'],
      ['/v1/track', { event: 'E' }, 'VALIDATION_FAILED'],
      ['/v1/batch', { batch: [track(), track({ properties: { big } })] }, 'EVENT_TOO_LARGE'],
      ['/v1/track', track({ properties: { big } }), 'EVENT_TOO_LARGE'],
    ];
    for (const [path, body, code] of cases) {
      const res = await post(path, body, auth);
      expect(res.status, code).to.equal(400);
      const answer = (await res.json()) as { success: boolean; code: string };
      expect(answer).to.deep.include({ success: false, code });
    }
    // Over 500 KB of messages each under 32 KB.
    const many = Array.from({ length: 20 }, () => track({ properties: { p: 'y'.repeat(30 * 1024) } }));
    const res = await post('/v1/batch', { batch: many }, auth);
    expect(res.status).to.equal(400);
    expect(((await res.json()) as { code: string }).code).to.equal('PAYLOAD_TOO_LARGE');
    expect(intake.published).to.have.length(0);
  });

  it('measures a message as the client serialised it (whitespace counts, as Python sends it)', async () => {
    const pad = ' '.repeat(SEGMENT_LIMITS.maxMessageBytes);
    const message = JSON.stringify(track()).replace('{', `{${pad}`);
    const res = await post('/v1/batch', `{"batch": [${message}]}`, { Authorization: basic('tk_a') });
    expect(res.status).to.equal(400);
    expect(((await res.json()) as { code: string }).code).to.equal('EVENT_TOO_LARGE');
  });

  it('answers 429 with Retry-After when rate limited, 503 when Kafka does not acknowledge', async () => {
    intake.limited = true;
    const limited = await post('/v1/batch', { batch: [track()] }, { Authorization: basic('tk_a') });
    expect(limited.status).to.equal(429);
    expect(limited.headers.get('retry-after')).to.equal('7');
    intake.limited = false;
    intake.kafkaDown = true;
    const down = await post('/v1/batch', { batch: [track()] }, { Authorization: basic('tk_a') });
    expect(down.status).to.equal(503);
    expect(((await down.json()) as { code: string }).code).to.equal('KAFKA_UNAVAILABLE');
  });

  /** A GET with a Host header of our choosing (fetch does not let one set Host). */
  const getAs = (path: string, headers: Record<string, string>) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      const req = request(`${base}${path}`, { headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('serves the settings document with its apiHost on this gateway, 401 for an unknown key', async () => {
    const res = await getAs('/v1/projects/tk_a/settings', {
      Host: 'gw.example:8443',
      'X-Forwarded-Proto': 'https',
      Origin: 'https://page.example',
    });
    expect(res.status).to.equal(200);
    expect(res.headers['access-control-allow-origin']).to.equal('https://page.example');
    const doc = JSON.parse(res.body) as Record<string, Record<string, unknown>>;
    expect(doc.integrations).to.deep.equal({
      'Segment.io': {
        apiKey: 'tk_a',
        apiHost: 'gw.example:8443/v1',
        protocol: 'https',
        unbundledIntegrations: [],
        addBundledMetadata: true,
        maybeBundledConfigIds: {},
      },
    });
    expect(doc.metrics).to.deep.include({ sampleRate: 0 });
    expect(doc.remotePlugins).to.deep.equal([]);
    expect(doc.enabledMiddleware).to.deep.equal({});
    const plain = (await (await fetch(`${base}/v1/projects/tk_a/settings`)).json()) as typeof doc;
    expect(plain.integrations!['Segment.io']).to.deep.include({ apiHost: base.slice(7) + '/v1', protocol: 'http' });
    expect((await fetch(`${base}/v1/projects/tk_nope/settings`)).status).to.equal(401);
    for (const host of ['a_b', 'gw.example:8443/x', 'gw.example:port']) {
      const bad = await getAs('/v1/projects/tk_a/settings', { Host: host });
      expect(bad.status, host).to.equal(400);
    }
    expect((await getAs('/v1/projects/tk_a/settings', { Host: '[::1]:8080' })).status).to.equal(200);
    const elsewhere = await fetch(`${base}/v1/projects/tk_o/settings`, { headers: { Origin: 'https://evil.example' } });
    expect(elsewhere.status).to.equal(403);
  });
});
