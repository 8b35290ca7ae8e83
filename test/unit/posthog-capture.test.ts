import { gzipSync } from 'node:zlib';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { AppError, KafkaUnavailableError, createExpressApp, endApp, type ProducerMessage } from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';
import {
  corsFor,
  loadGatewayConfig,
  posthogRoutes,
  POSTHOG_CAPTURE_PATHS,
  type Intake,
} from '@telemetry/ingest-gateway';
import { Compression, type RemoteConfig } from 'posthog-js';
import { silentLogger } from './support/fakes.js';

const TOKEN = 'tk_posthog_unit_good';
const OTHER = 'tk_posthog_unit_other';

/** Our Intake, small: two keys, publishes into an array, can fail as Kafka or the limiter does. */
class FakeIntake implements Intake {
  published: ProducerMessage[][] = [];
  failPublish: AppError | undefined;
  failAuth: AppError | undefined;
  authenticate(raw: string | undefined): VerifiedKey {
    if (this.failAuth) throw this.failAuth;
    if (!raw) throw new AppError('MISSING_CREDENTIALS', 'no key');
    if (raw !== TOKEN && raw !== OTHER) throw new AppError('INVALID_CREDENTIALS', 'unknown key');
    return {
      keyId: raw === TOKEN ? 'key-a' : 'key-b',
      tenantId: raw === TOKEN ? 'tenant-a' : 'tenant-b',
      name: 'k',
      kind: 'telemetry',
      scopes: new Set(),
      monitorIds: new Set(),
      allowedOrigins: new Set(),
      allowedSources: new Set(),
      ipStorage: 'truncated',
    };
  }
  publish(_key: VerifiedKey, messages: ProducerMessage[]): Promise<void> {
    if (this.failPublish) return Promise.reject(this.failPublish);
    this.published.push(messages);
    return Promise.resolve();
  }
  /** The event messages published, parsed. */
  messages(): Record<string, unknown>[] {
    return this.published.flat().map((m) => JSON.parse(String(m.value)) as Record<string, unknown>);
  }
}

const config = loadGatewayConfig({
  KAFKA_BROKERS: 'localhost:9092',
  CLICKHOUSE_URL: 'http://localhost:8123',
  DATABASE_URL: 'postgres://svc:pw@localhost:5432/telemetry',
  MAX_BODY_BYTES: String(256 * 1024),
});

function jsEvent(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uuid: '0190b4e2-7c2a-7b6c-9d1e-3f4a5b6c7d8e',
    event: '$pageview',
    properties: {
      token: TOKEN,
      distinct_id: '0190b4e2-anon',
      $device_id: '0190b4e2-anon',
      $is_identified: false,
      $lib: 'web',
      $raw_user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
      $ip: '203.0.113.9',
      $current_url: 'http://127.0.0.1/page',
    },
    timestamp: '2026-11-26T10:00:00.000Z',
    ...extra,
  };
}

describe('posthog capture API on the gateway (unit)', () => {
  let server: Server;
  let base: string;
  let intake: FakeIntake;

  before(async () => {
    intake = new FakeIntake();
    const app = createExpressApp();
    posthogRoutes(app, { config, logger: silentLogger, intake, cors: corsFor(600) });
    endApp(app, silentLogger);
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    intake.published = [];
    intake.failPublish = undefined;
    intake.failAuth = undefined;
  });

  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${base}${path}`, { method: 'POST', body, headers });
  const json = (v: unknown): string => JSON.stringify(v);

  it("posthog-js's gzip-js body (no Content-Encoding, no compression parameter, text/plain) on /e/ maps every field", async () => {
    const body = gzipSync(json({ api_key: TOKEN, batch: [jsEvent()], sent_at: '2026-11-26T10:00:05.000Z' }));
    const res = await post('/e/', body, { 'Content-Type': 'text/plain' });
    expect(res.status).to.equal(200);
    expect(await res.json()).to.deep.equal({ status: 1 });
    const [m] = intake.messages();
    expect(m).to.include({
      protocol: 'posthog',
      tenant_id: 'tenant-a',
      key_id: 'key-a',
      category: '$pageview',
      client_event_id: '0190b4e2-7c2a-7b6c-9d1e-3f4a5b6c7d8e',
      client_ts: '2026-11-26T10:00:00.000Z',
      sent_at: '2026-11-26T10:00:05.000Z',
      source: 'web',
      anonymous_id: '0190b4e2-anon',
      client_ip: '203.0.113.9',
      user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
    });
    expect(m).not.to.have.property('user_id');
    const payload = m!.payload as { properties: Record<string, unknown> };
    expect(payload.properties).not.to.have.property('token');
    expect(payload.properties.$current_url).to.equal('http://127.0.0.1/page');
  });

  it("sendBeacon's data= form, base64 (compression=base64) or plain JSON, is read", async () => {
    const b64 = Buffer.from(json({ api_key: TOKEN, batch: [jsEvent()] })).toString('base64');
    const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
    expect((await post('/e/?compression=base64', `data=${encodeURIComponent(b64)}`, form)).status).to.equal(200);
    // A form with `+` left unencoded (a space once decoded) is still base64.
    expect((await post('/e/', `data=${b64}`, form)).status).to.equal(200);
    expect((await post('/e/', `data=${encodeURIComponent(json([jsEvent()]))}`, form)).status).to.equal(200);
    expect((await post('/e/?compression=base64', b64, { 'Content-Type': 'text/plain' })).status).to.equal(200);
    expect(intake.messages()).to.have.length(4);
  });

  it('posthog-node and Python: /batch/ JSON with api_key, batch and sent_at, gzip by Content-Encoding', async () => {
    const event = {
      uuid: 'b5a1c3d2-0000-4000-8000-000000000001',
      event: 'signed up',
      distinct_id: 'user-42',
      properties: { $lib: 'posthog-node', plan: 'pro' },
      timestamp: '2026-11-26T10:00:00.123456+00:00',
    };
    const body = gzipSync(json({ api_key: TOKEN, batch: [event], sent_at: '2026-11-26T10:00:01+00:00' }));
    const res = await post('/batch/', body, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    expect(res.status).to.equal(200);
    const [m] = intake.messages();
    expect(m).to.include({ user_id: 'user-42', source: 'posthog-node', client_ts: '2026-11-26T10:00:00.123Z' });
    expect(m).not.to.have.property('anonymous_id');
    expect(m!.payload).to.deep.equal(event);
  });

  it('answers every capture path, with and without the trailing slash; one event, an array or a batch', async () => {
    for (const p of POSTHOG_CAPTURE_PATHS) {
      for (const path of [p, `${p}/`]) {
        const res = await post(path, json(jsEvent()), { 'Content-Type': 'application/json' });
        expect(res.status, path).to.equal(200);
      }
    }
    expect((await post('/i/v0/e/', json([jsEvent(), jsEvent({ uuid: 'x2' })]))).status).to.equal(200);
    expect(intake.messages()).to.have.length(POSTHOG_CAPTURE_PATHS.length * 2 + 2);
  });

  it('a time from offset before the send time; the send time from the _ query parameter (ms)', async () => {
    const { timestamp: _t, ...noTime } = jsEvent({ offset: 1500 });
    const res = await post('/e/?_=1795600000000', json([noTime]));
    expect(res.status).to.equal(200);
    const [m] = intake.messages();
    expect(m).to.include({ sent_at: new Date(1795600000000).toISOString() });
    expect(m).to.include({ client_ts: new Date(1795600000000 - 1500).toISOString() });
  });

  it("answers errors as PostHog's API does, with our code, and publishes nothing", async () => {
    const cases: [string, string | Buffer, number, string, string][] = [
      [
        '/batch/',
        json({ batch: [{ event: 'x', distinct_id: 'u' }] }),
        401,
        'authentication_error',
        'MISSING_CREDENTIALS',
      ],
      [
        '/batch/',
        json({ api_key: 'tk_nope', batch: [{ event: 'x' }] }),
        401,
        'authentication_error',
        'INVALID_CREDENTIALS',
      ],
      [
        '/batch/',
        json({ api_key: TOKEN, batch: [jsEvent({ token: OTHER })] }),
        401,
        'authentication_error',
        'INVALID_CREDENTIALS',
      ],
      ['/batch/', '{"api_key":', 400, 'validation_error', 'INVALID_JSON'],
      ['/batch/', json({ api_key: TOKEN, batch: [] }), 400, 'validation_error', 'VALIDATION_FAILED'],
      [
        '/batch/',
        json({ api_key: TOKEN, batch: [{ distinct_id: 'u' }] }),
        400,
        'validation_error',
        'VALIDATION_FAILED',
      ],
      [
        '/batch/?compression=lz64',
        json({ api_key: TOKEN, batch: [] }),
        415,
        'validation_error',
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      ['/e/?compression=gzip-js', json([jsEvent()]), 400, 'validation_error', 'INVALID_JSON'],
      [
        '/e/',
        json([jsEvent({ properties: { token: TOKEN, distinct_id: 'd', big: 'x'.repeat(200 * 1024) } })]),
        413,
        'validation_error',
        'EVENT_TOO_LARGE',
      ],
      ['/e/', 'x'.repeat(300 * 1024), 413, 'validation_error', 'PAYLOAD_TOO_LARGE'],
      ['/e/', gzipSync(Buffer.alloc(200 * 1024, 32)), 413, 'validation_error', 'PAYLOAD_TOO_LARGE'],
    ];
    for (const [path, body, status, type, code] of cases) {
      const res = await post(path, body, { 'Content-Type': 'application/json' });
      expect(res.status, `${code} ${JSON.stringify(await res.clone().json())}`).to.equal(status);
      const answer = (await res.json()) as Record<string, unknown>;
      expect(answer, code).to.include({ type, code });
      expect(answer.detail, code).to.be.a('string');
      expect(answer, code).to.have.property('attr');
    }
    const bad = await post(
      '/batch/',
      json({ api_key: TOKEN, batch: [{ event: 'x', distinct_id: 'd', timestamp: 'yesterday' }] }),
    );
    expect(await bad.json()).to.include({ attr: '/batch/0/timestamp' });
    expect(intake.published).to.deep.equal([]);
  });

  it('refuses an event without a distinct_id, and an offset that leaves the range of dates, with 400 (never a 500 the SDKs would retry)', async () => {
    let res = await post('/batch/', json({ api_key: TOKEN, batch: [{ event: 'x', uuid: 'u1' }] }));
    expect(res.status).to.equal(400);
    expect(await res.json()).to.include({ code: 'VALIDATION_FAILED', attr: '/batch/0/distinct_id' });
    res = await post(
      '/batch/',
      json({ api_key: TOKEN, batch: [{ event: 'x', distinct_id: 'd', uuid: 'u2', offset: 1e17 }] }),
    );
    expect(res.status).to.equal(400);
    expect(await res.json()).to.include({ code: 'VALIDATION_FAILED', attr: '/batch/0/timestamp' });
    expect(intake.published).to.deep.equal([]);
  });

  it('503 with Retry-After when rate limited (posthog-js drops a 429) or when Kafka did not acknowledge', async () => {
    intake.failAuth = new AppError('RATE_LIMITED', 'too many', undefined, { 'Retry-After': '2' });
    let res = await post('/e/', json([jsEvent()]));
    expect(res.status).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal('2');
    expect(await res.json()).to.include({ type: 'server_error', code: 'RATE_LIMITED' });
    intake.failAuth = undefined;
    intake.failPublish = new KafkaUnavailableError();
    res = await post('/e/', json([jsEvent()]));
    expect(res.status).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal('1');
    expect(await res.json()).to.include({ type: 'server_error', code: 'KAFKA_UNAVAILABLE' });
  });

  it('flags and decide answer no flags; an unknown token is 401', async () => {
    let res = await post('/flags/?v=2', gzipSync(json({ token: TOKEN, distinct_id: 'd' })), {
      'Content-Type': 'text/plain',
    });
    expect(res.status).to.equal(200);
    let body = (await res.json()) as Record<string, unknown>;
    expect(body).to.include({ errorsWhileComputingFlags: false });
    expect(body.flags).to.deep.equal({});
    expect(body).not.to.have.property('sessionRecording');
    res = await post('/flags/?v=4', json({ api_key: TOKEN, distinct_id: 'd', sent_at: '2026-11-26T10:00:00Z' }));
    expect(res.status).to.equal(200);
    res = await post('/decide/?v=3', json({ token: TOKEN, distinct_id: 'd' }));
    body = (await res.json()) as Record<string, unknown>;
    expect(body).to.include({ sessionRecording: false, hasFeatureFlags: false });
    expect(body).to.not.have.property('surveys');
    expect(body.featureFlags).to.deep.equal({});
    expect(body.featureFlagPayloads).to.deep.equal({});
    res = await post('/flags/?v=2', json({ token: 'tk_nope', distinct_id: 'd' }));
    expect(res.status).to.equal(401);
    expect(await res.json()).to.include({ type: 'authentication_error', code: 'INVALID_CREDENTIALS' });
  });

  it('the remote config (JSON and config.js) turns off everything that loads a script', async () => {
    let res = await fetch(`${base}/array/${TOKEN}/config`);
    expect(res.status).to.equal(200);
    const config = (await res.json()) as Record<string, unknown>;
    expect(config).to.include({ sessionRecording: false, heatmaps: false, hasFeatureFlags: false });
    // Absent, not false: posthog-js loads its surveys script for `surveys: false`.
    expect(config).to.not.have.property('surveys');
    expect(config).to.include({ captureDeadClicks: false, capturePerformance: false, autocaptureExceptions: false });
    expect(config.supportedCompression).to.deep.equal(['gzip-js', 'base64']);
    expect(config.siteApps).to.deep.equal([]);
    // Exactly a document of the pinned posthog-js's own RemoteConfig type (tsc checks the literal).
    const typed: RemoteConfig & { token: string } = {
      token: TOKEN,
      supportedCompression: [Compression.GZipJS, Compression.Base64],
      hasFeatureFlags: false,
      captureDeadClicks: false,
      capturePerformance: false,
      autocapture_opt_out: false,
      autocaptureExceptions: false,
      errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
      elementsChainAsString: true,
      sessionRecording: false,
      heatmaps: false,
      productTours: false,
      conversations: false,
      logs: { captureConsoleLogs: false },
      defaultIdentifiedOnly: true,
      toolbarParams: {},
      toolbarVersion: 'toolbar',
      isAuthenticated: false,
      siteApps: [],
    };
    expect(config).to.deep.equal(typed);
    res = await fetch(`${base}/array/${TOKEN}/config.js`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/javascript/);
    const window: { _POSTHOG_REMOTE_CONFIG?: Record<string, { config: unknown; siteApps: unknown }> } = {};
    runInNewContext(await res.text(), { window });
    expect(window._POSTHOG_REMOTE_CONFIG?.[TOKEN]?.config).to.deep.equal(config);
    expect(window._POSTHOG_REMOTE_CONFIG?.[TOKEN]?.siteApps).to.deep.equal([]);
    res = await fetch(`${base}/array/tk_nope/config`);
    expect(res.status).to.equal(401);
    expect(await res.json()).to.include({ code: 'INVALID_CREDENTIALS' });
  });

  it("CORS: a preflight allows the page's origin and the headers it asks for; answers expose Retry-After", async () => {
    const res = await fetch(`${base}/e/`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://127.0.0.1:9',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type,x-custom-header',
      },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('http://127.0.0.1:9');
    expect(res.headers.get('access-control-allow-headers')).to.equal('content-type,x-custom-header');
    const post = await fetch(`${base}/e/`, {
      method: 'POST',
      body: json([jsEvent()]),
      headers: { Origin: 'http://127.0.0.1:9' },
    });
    expect(post.headers.get('access-control-expose-headers')).to.include('Retry-After');
  });
});
