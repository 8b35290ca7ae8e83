import { gzipSync } from 'node:zlib';
import { request } from 'node:http';
import { expect } from 'chai';
import { writeSection } from '../../harness/report.js';
import { createTenant, revokeKey } from '@telemetry/store';
import {
  adminRegistry,
  eventually,
  newKey,
  registerMonitors,
  registerMonitorsIn,
  RELIABILITY_TITLE,
  runGateway,
  runQuery,
  type Running,
} from '../support/fixtures.js';

/** A monitor of another tenant than every key of the corpus. */
const FOREIGN_TENANT = 'ten_corpusforeign';
const FOREIGN = 'foreign-monitor';

interface Case {
  name: string;
  service: 'gateway' | 'query';
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  status: number;
  code?: string;
}

interface Answer {
  status: number;
  code?: string;
  success?: boolean;
}

/** A name fit for a Markdown table: pipes and control characters escaped. */
function printable(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    out += ch === '|' ? '\\|' : c < 0x20 ? `\\x${c.toString(16).padStart(2, '0')}` : ch;
  }
  return out;
}

/** Raw HTTP (not fetch): header abuse and odd paths must reach the server as written. */
function send(base: string, c: Case): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: c.method,
        // what a browser would escape (spaces, non-ASCII); everything else goes as written
        path: c.path.replace(/[^\x21-\x7e]/g, (ch) => encodeURIComponent(ch)),
        headers: {
          ...(c.body !== undefined ? { 'content-length': String(Buffer.byteLength(c.body)) } : {}),
          ...c.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: { code?: string; success?: boolean } = {};
          try {
            json = JSON.parse(text) as typeof json;
          } catch {
            json = { code: res.headers['x-error-code'] as string | undefined };
          }
          resolve({ status: res.statusCode ?? 0, code: json.code, success: json.success });
        });
      },
    );
    req.on('error', reject);
    if (c.body !== undefined) req.write(c.body);
    req.end();
  });
}

interface Registry {
  /** Every monitor the list shows. */
  listed: { id: string; name: string; url: string }[];
  /** The monitors the corpus aims at, in full (updated_at included). */
  shown: Record<string, unknown>;
}

/** GET with a bearer key over fetch, for the registry checks around the corpus. */
async function getJson<T>(base: string, path: string, key: string): Promise<{ status: number; body: T }> {
  const r = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: r.status, body: (await r.json()) as T };
}

/**
 * A corpus of hostile requests against every route, each with the status and code we
 * promise. The answers are written to RELIABILITY.md (section bad-input).
 */
describe('bad-input corpus (every route, real Kafka and ClickHouse)', () => {
  let gateway: Running;
  let query: Running;
  let access: string;
  let revoked: string;
  let api: string;
  let noScope: string;
  let otherTenant: string;
  let monitors: string;
  let restricted: string;
  let expiredApi: string;
  let expiredAccess: string;
  /** The registry as the corpus found it. */
  let registryBefore: Registry;
  const results: { name: string; expected: string; got: string }[] = [];

  before(async () => {
    [gateway, query] = await Promise.all([runGateway(), runQuery()]);
    await registerMonitors('m1', 'tenant-a-monitor', 'tenant-b-monitor');
    // A monitor of another tenant: every key of the corpus (default tenant) gets 404.
    await createTenant(adminRegistry(), 'corpus foreign', FOREIGN_TENANT);
    await registerMonitorsIn(FOREIGN_TENANT, FOREIGN);
    expiredApi = await newKey({ kind: 'api', name: 'corpus expired', scopes: ['checks:read'], expiresInSeconds: 1 });
    expiredAccess = await newKey({ kind: 'telemetry', name: 'corpus expired', expiresInSeconds: 1 });
    access = await newKey({ kind: 'telemetry', name: 'corpus' });
    revoked = await newKey({ kind: 'telemetry', name: 'corpus revoked' });
    api = await newKey({ kind: 'api', name: 'corpus api', scopes: ['checks:read'] });
    noScope = await newKey({ kind: 'api', name: 'corpus no scope', scopes: ['monitors:write'] });
    otherTenant = await newKey({
      kind: 'api',
      name: 'corpus tenant',
      scopes: ['checks:read'],
      monitorIds: ['tenant-a-monitor'],
    });
    monitors = await newKey({ kind: 'api', name: 'corpus monitors', scopes: ['monitors:read', 'monitors:write'] });
    restricted = await newKey({
      kind: 'api',
      name: 'corpus monitors restricted',
      scopes: ['monitors:write'],
      monitorIds: ['tenant-a-monitor'],
    });
    await revokeKey(adminRegistry(), revoked.split('_')[1]!);
    await eventually('keys loaded and the revocation seen', async () => {
      const a = await send(gateway.url, {
        name: '',
        service: 'gateway',
        method: 'POST',
        path: '/api/telemetry/events',
        headers: { 'content-type': 'application/json', 'x-access-key': access },
        body: '{"events":[{"source":"s","category":"c","payload":{}}]}',
        status: 200,
      });
      const b = await send(query.url, {
        name: '',
        service: 'query',
        method: 'GET',
        path: '/api/monitors/tenant-a-monitor/checks',
        headers: { authorization: `Bearer ${otherTenant}` },
        status: 200,
      });
      const r = await send(gateway.url, {
        name: '',
        service: 'gateway',
        method: 'POST',
        path: '/api/telemetry/events',
        headers: { 'content-type': 'application/json', 'x-access-key': revoked },
        body: '{"events":[{"source":"s","category":"c","payload":{}}]}',
        status: 401,
      });
      const m = await send(query.url, {
        name: '',
        service: 'query',
        method: 'GET',
        path: '/api/monitors/m1',
        headers: { authorization: `Bearer ${monitors}` },
        status: 200,
      });
      const w = await send(query.url, {
        name: '',
        service: 'query',
        method: 'PATCH',
        path: '/api/monitors/tenant-a-monitor',
        headers: { authorization: `Bearer ${restricted}`, 'content-type': 'application/json' },
        body: '{}',
        status: 400,
      });
      return a.status === 200 && b.status === 200 && r.status === 401 && m.status === 200 && w.status === 400
        ? true
        : undefined;
    });
    registryBefore = await registry();
  });

  /** Every monitor (all pages), and the ones the corpus aims at in full. */
  async function registry(): Promise<Registry> {
    const listed: Registry['listed'] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: Registry['listed']; next_cursor: string | null } } = await getJson(
        query.url,
        `/api/monitors?limit=1000${cursor ? `&cursor=${cursor}` : ''}`,
        monitors,
      );
      expect(page.status).to.equal(200);
      listed.push(...page.body.data.map(({ id, name, url }) => ({ id, name, url })));
      cursor = page.body.next_cursor;
    } while (cursor);
    const shown: Record<string, unknown> = {};
    for (const id of ['m1', 'tenant-a-monitor', 'tenant-b-monitor']) {
      const r = await getJson<{ data: unknown }>(query.url, `/api/monitors/${id}`, monitors);
      expect(r.status, id).to.equal(200);
      shown[id] = r.body.data;
    }
    return { listed, shown };
  }

  after(async () => {
    await Promise.all([gateway?.stop(), query?.stop()]);
    const rows = results.map((r) => `| ${printable(r.name)} | ${r.expected} | ${r.got} |`).join('\n');
    const section = `## Bad-input corpus\n\nWritten by \`test/e2e/bad-input.int.test.ts\` (part of \`npm test\`) on ${new Date().toISOString().slice(0, 10)}: ${results.length} hostile requests, each answered as expected${results.some((r) => r.expected !== r.got) ? ' EXCEPT the rows where the columns differ' : ''}; none got a 5xx.\n\n| request | expected | answered |\n|---|---|---|\n${rows}`;
    writeSection('RELIABILITY.md', 'bad-input', section, RELIABILITY_TITLE);
  });

  const ev = (over: object = {}): object => ({ source: 'corpus', category: 'c', payload: {}, ...over });
  const body = (events: unknown, extra: object = {}): string => JSON.stringify({ events, ...extra });
  const post = (
    name: string,
    headers: Record<string, string>,
    b: string | Buffer,
    status: number,
    code?: string,
  ): Case => ({
    name: `POST events: ${name}`,
    service: 'gateway',
    method: 'POST',
    path: '/api/telemetry/events',
    headers: { 'content-type': 'application/json', 'x-access-key': '@access', ...headers },
    body: b,
    status,
    code,
  });
  const list = (name: string, path: string, headers: Record<string, string>, status: number, code?: string): Case => ({
    name: `GET ${path.split('?')[0]!.replace(/\/api\/monitors\/[^/]*/, '/api/monitors/{id}')}: ${name}`,
    service: 'query',
    method: 'GET',
    path,
    headers: { authorization: 'Bearer @api', ...headers },
    status,
    code,
  });

  /** Every name and URL sent in a monitor body carries this mark, so a leak is easy to find. */
  const MARK = 'corpus-bad';
  const good = (over: object = {}): Record<string, unknown> => ({
    name: `${MARK} monitor`,
    url: `https://${MARK}.example/health`,
    ...over,
  });
  /** A request to the monitor registry, with the monitors:read+write key unless told. */
  const mon = (
    name: string,
    method: string,
    path: string,
    b: unknown,
    status: number,
    code?: string,
    headers: Record<string, string> = {},
  ): Case => ({
    name: `${method} ${path.split('?')[0]!.replace(/^\/api\/monitors\/[^/]+/, '/api/monitors/{id}')}: ${name}`,
    service: 'query',
    method,
    path,
    headers: {
      authorization: 'Bearer @monitors',
      ...(b !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: b === undefined ? undefined : typeof b === 'string' || Buffer.isBuffer(b) ? b : JSON.stringify(b),
    status,
    code,
  });
  const create = (name: string, b: unknown, status: number, code?: string, headers?: Record<string, string>): Case =>
    mon(name, 'POST', '/api/monitors', b, status, code, headers);
  const change = (name: string, b: unknown, status: number, code?: string, headers?: Record<string, string>): Case =>
    mon(name, 'PATCH', '/api/monitors/m1', b, status, code, headers);
  const invalidCreate = (name: string, over: object): Case => create(name, good(over), 400, 'VALIDATION_FAILED');
  const invalidChange = (name: string, b: object): Case => change(name, b, 400, 'VALIDATION_FAILED');
  /** One wrong JSON type for every field of a monitor. */
  const wrongTypes: Record<string, unknown> = {
    name: 42,
    url: ['https://corpus-bad.example/'],
    method: 1,
    interval_seconds: '60',
    timeout_ms: true,
    expected_status_codes: '2xx',
    keyword: 5,
    degraded_threshold_ms: '100',
    failure_threshold: 2.5,
    recovery_threshold: null,
    follow_redirects: 'yes',
    headers: ['X-A: b'],
    body: { a: 1 },
    paused: 0,
    webhooks: 'https://corpus-bad.example/hook',
    webhook_secret: 1234567890123456,
    type: ['tcp'],
    tcp_send: 7,
    tcp_expect: { reply: 'PONG' },
    tls_min_days: '14',
    confirm_delay_ms: '2000',
    dns_record_type: 1,
    dns_expected: '192.0.2.1',
    dns_resolver: ['192.0.2.53'],
    maintenance_windows: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' },
    heartbeat_grace_seconds: '60',
    locations: 'eu-west',
    quorum: '2',
  };
  const missing = 'corpus-missing-monitor';

  const pathPart = (id: string): string => (/%[0-9A-F]{2}/.test(id) ? id : encodeURIComponent(id));
  const corpus = (): Case[] => [
    // --- keys
    post('no key', { 'x-access-key': '' }, body([ev()]), 401, 'MISSING_CREDENTIALS'),
    post(
      'wrong key',
      { 'x-access-key': 'tk_0000000000000000_' + '0'.repeat(64) },
      body([ev()]),
      401,
      'INVALID_CREDENTIALS',
    ),
    post('revoked key', { 'x-access-key': '@revoked' }, body([ev()]), 401, 'INVALID_CREDENTIALS'),
    post('expired key', { 'x-access-key': '@expiredAccess' }, body([ev()]), 401, 'KEY_EXPIRED'),
    post('API key used as access key', { 'x-access-key': '@api' }, body([ev()]), 401, 'INVALID_CREDENTIALS'),
    post('key with SQL in it', { 'x-access-key': "tk_' OR '1'='1" }, body([ev()]), 401, 'INVALID_CREDENTIALS'),
    {
      ...post('header and query keys disagree', {}, body([ev()]), 401, 'INVALID_CREDENTIALS'),
      path: '/api/telemetry/events?key=@revoked',
    },
    {
      ...post('key parameter given twice', { 'x-access-key': '' }, body([ev()]), 401, 'INVALID_CREDENTIALS'),
      path: '/api/telemetry/events?key=@access&key=@access',
    },
    post('4 KB key', { 'x-access-key': 'tk_' + 'a'.repeat(4096) }, body([ev()]), 401, 'INVALID_CREDENTIALS'),
    post(
      'key with unicode',
      { 'x-access-key': encodeURIComponent('tk_ключ') },
      body([ev()]),
      401,
      'INVALID_CREDENTIALS',
    ),
    // --- bodies
    post('empty body', {}, '', 400, 'INVALID_JSON'),
    post('truncated JSON', {}, '{"events":[{"source":"s"', 400, 'INVALID_JSON'),
    post('trailing garbage', {}, body([ev()]) + 'xyz', 400, 'INVALID_JSON'),
    post('JSON with comments', {}, '{"events":[/*x*/]}', 400, 'INVALID_JSON'),
    post('NaN number', {}, '{"events":[{"source":"s","category":"c","payload":{"x":NaN}}]}', 400, 'INVALID_JSON'),
    post('invalid UTF-8', {}, Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 400, 'INVALID_JSON'),
    post('UTF-16 body', {}, Buffer.from(body([ev()]), 'utf16le'), 400, 'INVALID_JSON'),
    post('array at the top', {}, '[]', 400, 'VALIDATION_FAILED'),
    post('string at the top', {}, '"events"', 400, 'VALIDATION_FAILED'),
    post('events is an object', {}, '{"events":{"0":{}}}', 400, 'VALIDATION_FAILED'),
    post('events empty', {}, body([]), 400, 'VALIDATION_FAILED'),
    post('event is null', {}, body([null]), 400, 'VALIDATION_FAILED'),
    post('source missing', {}, body([{ category: 'c', payload: {} }]), 400, 'VALIDATION_FAILED'),
    post('source is a number', {}, body([ev({ source: 5 })]), 400, 'VALIDATION_FAILED'),
    post('source with SQL', {}, body([ev({ source: "x'); DROP TABLE events; --" })]), 400, 'VALIDATION_FAILED'),
    post('source with newline', {}, body([ev({ source: 'a\nb' })]), 400, 'VALIDATION_FAILED'),
    post('source 129 chars', {}, body([ev({ source: 's'.repeat(129) })]), 400, 'VALIDATION_FAILED'),
    post('category with NUL', {}, body([ev({ category: 'c\u0000' })]), 400, 'VALIDATION_FAILED'),
    post('payload is an array', {}, body([ev({ payload: [1] })]), 400, 'VALIDATION_FAILED'),
    post('payload is a string', {}, body([ev({ payload: '{}' })]), 400, 'VALIDATION_FAILED'),
    post('unknown field', {}, body([ev({ admin: true })]), 400, 'VALIDATION_FAILED'),
    post(
      '__proto__ field on the event',
      {},
      '{"events":[{"source":"s","category":"c","payload":{},"__proto__":{"admin":true}}]}',
      400,
      'VALIDATION_FAILED',
    ),
    post(
      'constructor field on the body',
      {},
      '{"events":[{"source":"s","category":"c","payload":{}}],"constructor":{"prototype":{}}}',
      400,
      'VALIDATION_FAILED',
    ),
    post('bad timestamp', {}, body([ev({ timestamp: '2026-13-99' })]), 400, 'VALIDATION_FAILED'),
    // Accepted, and kept under the receive time (docs/api.md, "Event times: the window"):
    // test/e2e/engines.int.test.ts reads them back.
    post(
      '300 events in 300 months (accepted, kept under the receive time)',
      {},
      body(
        Array.from({ length: 300 }, (_, i) =>
          ev({ id: `corpus-months-${i}`, timestamp: new Date(Date.UTC(2000, i, 1)).toISOString() }),
        ),
      ),
      200,
    ),
    post(
      'a timestamp in 2105 (accepted, kept under the receive time)',
      {},
      body([ev({ timestamp: '2105-12-31T23:59:59Z' })]),
      200,
    ),
    post(
      'a UUIDv7 id dated 1970 (accepted, kept under the receive time)',
      {},
      body([ev({ id: '00000000-0001-7000-8000-000000000000' })]),
      200,
    ),
    post('client id with spaces', {}, body([ev({ id: 'a b' })]), 400, 'VALIDATION_FAILED'),
    post('bad sent_at', {}, body([ev()], { sent_at: 'now' }), 400, 'VALIDATION_FAILED'),
    post(
      'nesting depth 40',
      {},
      '{"events":[{"source":"s","category":"c","payload":' + '{"a":'.repeat(40) + '1' + '}'.repeat(40) + '}]}',
      400,
      'VALIDATION_FAILED',
    ),
    post('nesting depth 100000 (arrays)', {}, '['.repeat(100_000) + ']'.repeat(100_000), 400, 'VALIDATION_FAILED'),
    // --- limits and encodings
    post('501 events', {}, body(Array.from({ length: 501 }, () => ev())), 413, 'BATCH_TOO_LARGE'),
    post('one event of 70 KB', {}, body([ev({ payload: { x: 'x'.repeat(70_000) } })]), 413, 'EVENT_TOO_LARGE'),
    post('body of 1.5 MB', {}, body([ev({ payload: { x: 'x'.repeat(1_500_000) } })]), 413, 'PAYLOAD_TOO_LARGE'),
    post(
      'gzip bomb',
      { 'content-encoding': 'gzip' },
      gzipSync(Buffer.alloc(30 * 1024 * 1024, 0x20)),
      413,
      'PAYLOAD_TOO_LARGE',
    ),
    post('gzip header but plain body', { 'content-encoding': 'gzip' }, body([ev()]), 400, 'INVALID_JSON'),
    post('deflate encoding', { 'content-encoding': 'deflate' }, body([ev()]), 415, 'UNSUPPORTED_MEDIA_TYPE'),
    post('XML content type', { 'content-type': 'application/xml' }, '<events/>', 415, 'UNSUPPORTED_MEDIA_TYPE'),
    post(
      'form content type',
      { 'content-type': 'application/x-www-form-urlencoded' },
      'events=1',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ),
    post(
      'multipart content type',
      { 'content-type': 'multipart/form-data; boundary=x' },
      '--x--',
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ),
    post('Content-Length lies (too big)', { 'content-length': '99999999' }, '{}', 413, 'PAYLOAD_TOO_LARGE'),
    // Answered early; the rest is read and discarded (DISCARD_BODY_MAX_BYTES) before the close.
    post('body of 12 MB', {}, 'x'.repeat(12 * 1024 * 1024), 413, 'PAYLOAD_TOO_LARGE'),
    // --- header abuse
    post('huge X-Request-Id is replaced', { 'x-request-id': 'x'.repeat(5000) }, body([ev()]), 200),
    post('X-Request-Id with CRLF-ish bytes is replaced', { 'x-request-id': 'a%0d%0aSet-Cookie: x' }, body([ev()]), 200),
    post('charset latin1 declared', { 'content-type': 'application/json; charset=latin1' }, body([ev()]), 200),
    // --- heartbeats (the token is the credential)
    {
      name: 'heartbeat: malformed token',
      service: 'gateway',
      method: 'POST',
      path: '/api/heartbeats/hb_x',
      status: 404,
      code: 'HEARTBEAT_NOT_FOUND',
    },
    {
      name: 'heartbeat: forged MAC',
      service: 'gateway',
      method: 'POST',
      path: `/api/heartbeats/hb_default_0123456789abcdef_${'0'.repeat(32)}`,
      status: 404,
      code: 'HEARTBEAT_NOT_FOUND',
    },
    {
      name: 'heartbeat: token of 2000 chars',
      service: 'gateway',
      method: 'POST',
      path: `/api/heartbeats/${'a'.repeat(2000)}`,
      status: 404,
      code: 'HEARTBEAT_NOT_FOUND',
    },
    {
      name: 'heartbeat: token with NUL',
      service: 'gateway',
      method: 'POST',
      path: '/api/heartbeats/hb_default%00',
      status: 404,
      code: 'HEARTBEAT_NOT_FOUND',
    },
    {
      name: 'heartbeat: token with a slash',
      service: 'gateway',
      method: 'POST',
      path: '/api/heartbeats/hb_a%2Fb',
      status: 404,
      code: 'HEARTBEAT_NOT_FOUND',
    },
    {
      name: 'heartbeat: GET',
      service: 'gateway',
      method: 'GET',
      path: '/api/heartbeats/hb_x',
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
    },
    // --- pixel
    {
      name: 'GET pixel: no key',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?source=s&category=c',
      status: 401,
      code: 'MISSING_CREDENTIALS',
    },
    {
      name: 'GET pixel: revoked key',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?key=@revoked&source=s&category=c',
      status: 401,
      code: 'INVALID_CREDENTIALS',
    },
    {
      name: 'GET pixel: payload not JSON',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&payload=%7Bnope',
      status: 400,
      code: 'INVALID_JSON',
    },
    {
      name: 'GET pixel: payload an array',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&payload=%5B%5D',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'GET pixel: source twice',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?key=@access&source=a&source=b&category=c',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'GET pixel: unknown parameter',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&admin=1',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'GET pixel: __proto__ parameter',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&__proto__=1',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'GET pixel: SQL in source',
      service: 'gateway',
      method: 'GET',
      path: `/api/telemetry/pixel.gif?key=@access&category=c&source=${encodeURIComponent("' OR 1=1 --")}`,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    // --- wrong routes and methods
    {
      name: 'GET events (POST only)',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/events',
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
    },
    {
      name: 'PUT events',
      service: 'gateway',
      method: 'PUT',
      path: '/api/telemetry/events',
      headers: { 'content-type': 'application/json' },
      body: '{}',
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
    },
    {
      name: 'path traversal on the gateway',
      service: 'gateway',
      method: 'GET',
      path: '/api/telemetry/../../etc/passwd',
      status: 404,
      code: 'NOT_FOUND',
    },
    // --- query: keys
    list('no key', '/api/monitors/m1/checks', { authorization: '' }, 401, 'MISSING_CREDENTIALS'),
    list('Basic auth', '/api/monitors/m1/checks', { authorization: 'Basic dXNlcjpwYXNz' }, 401, 'INVALID_CREDENTIALS'),
    list('Bearer without a key', '/api/monitors/m1/checks', { authorization: 'Bearer ' }, 401, 'INVALID_CREDENTIALS'),
    list(
      'access key as bearer',
      '/api/monitors/m1/checks',
      { authorization: 'Bearer @access' },
      401,
      'INVALID_CREDENTIALS',
    ),
    list(
      'revoked-kind key',
      '/api/monitors/m1/checks',
      { authorization: 'Bearer @revoked' },
      401,
      'INVALID_CREDENTIALS',
    ),
    list(
      'key in the query string instead',
      '/api/monitors/m1/checks?key=@api',
      { authorization: '' },
      401,
      'MISSING_CREDENTIALS',
    ),
    list(
      'key without the scope',
      '/api/monitors/m1/checks',
      { authorization: 'Bearer @noScope' },
      403,
      'INSUFFICIENT_SCOPE',
    ),
    list(
      'monitor outside the key’s list',
      '/api/monitors/tenant-b-monitor/checks',
      { authorization: 'Bearer @otherTenant' },
      403,
      'MONITOR_NOT_ALLOWED',
    ),
    list(
      'summary outside the key’s list',
      '/api/monitors/tenant-b-monitor/checks/summary',
      { authorization: 'Bearer @otherTenant' },
      403,
      'MONITOR_NOT_ALLOWED',
    ),
    list(
      'export outside the key’s list',
      '/api/monitors/tenant-b-monitor/checks/export',
      { authorization: 'Bearer @otherTenant' },
      403,
      'MONITOR_NOT_ALLOWED',
    ),
    // --- another tenant's monitor: it does not exist for these keys (404, never 403)
    ...(['checks', 'checks/summary', 'checks/export'] as const).map((r) =>
      list(`another tenant’s monitor (${r})`, `/api/monitors/${FOREIGN}/${r}`, {}, 404, 'MONITOR_NOT_FOUND'),
    ),
    list('expired API key', '/api/monitors/m1/checks', { authorization: 'Bearer @expiredApi' }, 401, 'KEY_EXPIRED'),
    // --- query: injection in the path and every parameter
    ...[
      "x'",
      "x' OR '1'='1",
      "x'; DROP TABLE checks; --",
      'x%00y',
      'x%5C',
      '%2F..%2F..',
      'x%20y',
      'x%0Ay',
      'é',
      'a'.repeat(129),
    ].flatMap((id) => [
      list(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        `/api/monitors/${pathPart(id)}/checks`,
        {},
        400,
        'INVALID_PARAMETER',
      ),
      list(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        `/api/monitors/${id}/checks/summary`,
        {},
        400,
        'INVALID_PARAMETER',
      ),
    ]),
    ...['limit', 'order', 'from', 'to', 'status', 'cursor'].flatMap((p) =>
      ["' OR 1=1 --", '1; DROP TABLE checks', '%00', '-1', '9'.repeat(40)].map((v) =>
        list(`${p}=${v}`, `/api/monitors/m1/checks?${p}=${encodeURIComponent(v)}`, {}, 400, 'INVALID_PARAMETER'),
      ),
    ),
    list(
      'interval injection',
      `/api/monitors/m1/checks/summary?interval=${encodeURIComponent("hour') --")}`,
      {},
      400,
      'INVALID_PARAMETER',
    ),
    list(
      'format injection',
      `/api/monitors/m1/checks/export?format=${encodeURIComponent('csv; rm -rf')}`,
      {},
      400,
      'INVALID_PARAMETER',
    ),
    list('parameter as array', '/api/monitors/m1/checks?limit[]=1', {}, 400, 'INVALID_PARAMETER'),
    list('__proto__ parameter', '/api/monitors/m1/checks?__proto__[x]=1', {}, 400, 'INVALID_PARAMETER'),
    list('huge query string', `/api/monitors/m1/checks?cursor=${'A'.repeat(6000)}`, {}, 400, 'INVALID_PARAMETER'),
    { ...list('POST on the list', '/api/monitors/m1/checks', {}, 405, 'METHOD_NOT_ALLOWED'), method: 'POST' },
    {
      ...list('DELETE on a monitor’s checks', '/api/monitors/m1/checks', {}, 405, 'METHOD_NOT_ALLOWED'),
      method: 'DELETE',
    },
    list('unknown route', '/api/monitors/m1/nope', {}, 404, 'NOT_FOUND'),
    // --- monitor registry: keys and scopes
    create('no key', good(), 401, 'MISSING_CREDENTIALS', { authorization: '' }),
    create('revoked key', good(), 401, 'INVALID_CREDENTIALS', { authorization: 'Bearer @revoked' }),
    create('checks:read key', good(), 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @api' }),
    create('key limited to a monitor', good(), 403, 'MONITOR_NOT_ALLOWED', { authorization: 'Bearer @restricted' }),
    mon('checks:read key', 'GET', '/api/monitors', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @api',
    }),
    mon('monitors:write key without monitors:read', 'GET', '/api/monitors', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @noScope',
    }),
    mon('checks:read key', 'GET', '/api/monitors/m1', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @api',
    }),
    change('checks:read key', { paused: false }, 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @api' }),
    mon('checks:read key', 'DELETE', '/api/monitors/m1', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @api',
    }),
    mon('checks:read key', 'GET', '/api/monitors/m1/incidents', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @api',
    }),
    mon('checks:read key', 'GET', '/api/monitors/m1/webhook-deliveries', undefined, 403, 'INSUFFICIENT_SCOPE', {
      authorization: 'Bearer @api',
    }),
    mon(
      'monitor outside the key’s list',
      'PATCH',
      '/api/monitors/tenant-b-monitor',
      { paused: false },
      403,
      'MONITOR_NOT_ALLOWED',
      {
        authorization: 'Bearer @restricted',
      },
    ),
    mon(
      'monitor outside the key’s list',
      'DELETE',
      '/api/monitors/tenant-b-monitor',
      undefined,
      403,
      'MONITOR_NOT_ALLOWED',
      {
        authorization: 'Bearer @restricted',
      },
    ),
    mon(
      'own monitor, javascript: URL',
      'PATCH',
      '/api/monitors/tenant-a-monitor',
      { url: 'javascript:alert(1)' },
      400,
      'VALIDATION_FAILED',
      {
        authorization: 'Bearer @restricted',
      },
    ),
    mon('another tenant’s monitor', 'GET', `/api/monitors/${FOREIGN}`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon('another tenant’s monitor', 'PATCH', `/api/monitors/${FOREIGN}`, { paused: false }, 404, 'MONITOR_NOT_FOUND'),
    mon('another tenant’s monitor', 'DELETE', `/api/monitors/${FOREIGN}`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon(
      'another tenant’s monitor',
      'POST',
      `/api/monitors/${FOREIGN}/webhook-secret`,
      undefined,
      404,
      'MONITOR_NOT_FOUND',
    ),
    mon('another tenant’s monitor', 'GET', `/api/monitors/${FOREIGN}/incidents`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon(
      'another tenant’s monitor',
      'GET',
      `/api/monitors/${FOREIGN}/webhook-deliveries`,
      undefined,
      404,
      'MONITOR_NOT_FOUND',
    ),
    // A version m1 is not at (versions count from 1 in the registry; m1 is at 1).
    mon('stale If-Match', 'PATCH', '/api/monitors/m1', { paused: true }, 412, 'PRECONDITION_FAILED', {
      'if-match': '"0"',
    }),
    mon('stale If-Match', 'DELETE', '/api/monitors/m1', undefined, 412, 'PRECONDITION_FAILED', { 'if-match': '"0"' }),
    // --- monitor registry: bodies
    create('empty body', '', 400, 'INVALID_JSON'),
    create('truncated JSON', '{"name":"corpus-bad monitor","url":"https://corpus-bad.exa', 400, 'INVALID_JSON'),
    create('trailing garbage', JSON.stringify(good()) + '}', 400, 'INVALID_JSON'),
    create('single quotes', "{'name':'corpus-bad','url':'https://corpus-bad.example/'}", 400, 'INVALID_JSON'),
    create('invalid UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 400, 'INVALID_JSON'),
    create('UTF-16 body', Buffer.from(JSON.stringify(good()), 'utf16le'), 400, 'INVALID_JSON'),
    create('null', 'null', 400, 'VALIDATION_FAILED'),
    create('a number', '42', 400, 'VALIDATION_FAILED'),
    create('array of monitors', [good()], 400, 'VALIDATION_FAILED'),
    create('empty object', {}, 400, 'VALIDATION_FAILED'),
    create('url missing', { name: `${MARK} monitor` }, 400, 'VALIDATION_FAILED'),
    create('name missing', { url: `https://${MARK}.example/` }, 400, 'VALIDATION_FAILED'),
    ...Object.entries(wrongTypes).map(([field, v]) => invalidCreate(`${field} of the wrong type`, { [field]: v })),
    ...Object.entries(wrongTypes)
      .filter(([field]) => ['name', 'url', 'interval_seconds', 'headers', 'webhooks'].includes(field))
      .map(([field, v]) => invalidChange(`${field} of the wrong type`, { [field]: v })),
    invalidChange('name null', { name: null }),
    // --- monitor registry: the egress policy (issue 14) and connection-only headers
    ...[
      'http://169.254.169.254/latest/meta-data/',
      'http://2852039166/',
      'http://167772161/',
      'http://0xa.1/',
      'http://[::ffff:a00:1]/',
      'http://[::ffff:169.254.169.254]/',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://0.0.0.0/',
      'http://192.168.0.1:8080/',
    ].flatMap((url) => [
      create(`denied target ${url}`, good({ url, paused: true }), 400, 'TARGET_NOT_ALLOWED'),
      create(`denied webhook ${url}`, good({ webhooks: [url], paused: true }), 400, 'TARGET_NOT_ALLOWED'),
      change(`denied target ${url}`, { url }, 400, 'TARGET_NOT_ALLOWED'),
    ]),
    ...['Host', 'content-length', 'Transfer-Encoding', 'connection', 'Keep-Alive', 'TE', 'Upgrade'].map((h) =>
      invalidCreate(`header ${h}`, { headers: { [h]: 'x' } }),
    ),
    invalidChange('header Host', { headers: { Host: 'internal.example' } }),
    invalidCreate('empty name', { name: '' }),
    invalidCreate('blank name', { name: '   ' }),
    invalidCreate('name of 201 chars', { name: MARK + 'n'.repeat(191) }),
    invalidCreate('method lower case', { method: 'get' }),
    invalidCreate('method TRACE', { method: 'TRACE' }),
    invalidCreate('method CONNECT', { method: 'CONNECT' }),
    // intervals, timeouts, thresholds
    invalidCreate('interval 0', { interval_seconds: 0 }),
    invalidCreate('interval -60', { interval_seconds: -60 }),
    invalidCreate('interval 86401', { interval_seconds: 86_401 }),
    invalidCreate('interval 1.5', { interval_seconds: 1.5 }),
    create(
      'interval 1e400',
      JSON.stringify(good()).replace(/}$/, ',"interval_seconds":1e400}'),
      400,
      'VALIDATION_FAILED',
    ),
    invalidCreate('timeout 99 ms', { timeout_ms: 99 }),
    invalidCreate('timeout 60001 ms', { timeout_ms: 60_001 }),
    invalidCreate('timeout longer than the interval', { interval_seconds: 5, timeout_ms: 5001 }),
    invalidChange('interval shorter than the stored timeout', { interval_seconds: 5 }),
    invalidCreate('degraded threshold 0', { degraded_threshold_ms: 0 }),
    invalidCreate('degraded threshold equal to the timeout', { timeout_ms: 1000, degraded_threshold_ms: 1000 }),
    invalidChange('degraded threshold over the stored timeout', { degraded_threshold_ms: 20_000 }),
    invalidCreate('failure threshold 0', { failure_threshold: 0 }),
    invalidCreate('failure threshold 21', { failure_threshold: 21 }),
    invalidCreate('recovery threshold -1', { recovery_threshold: -1 }),
    invalidCreate('recovery threshold 21', { recovery_threshold: 21 }),
    // expected status codes
    invalidCreate('no expected codes', { expected_status_codes: [] }),
    invalidCreate('expected code 99', { expected_status_codes: [99] }),
    invalidCreate('expected code 600', { expected_status_codes: [600] }),
    invalidCreate('expected code 6xx', { expected_status_codes: ['6xx'] }),
    invalidCreate('expected code 2XX', { expected_status_codes: ['2XX'] }),
    invalidCreate('expected code "200"', { expected_status_codes: ['200'] }),
    invalidCreate('21 expected codes', { expected_status_codes: Array.from({ length: 21 }, (_, i) => 200 + i) }),
    // URLs
    invalidCreate('javascript: URL', { url: 'javascript:alert(document.cookie)' }),
    invalidCreate('file: URL', { url: 'file:///etc/passwd' }),
    invalidCreate('ftp: URL', { url: 'ftp://corpus-bad.example/' }),
    invalidCreate('data: URL', { url: 'data:text/html,<script>alert(1)</script>' }),
    invalidCreate('gopher: URL', { url: 'gopher://corpus-bad.example:11211/_stats' }),
    invalidCreate('scheme-relative URL', { url: '//corpus-bad.example/health' }),
    invalidCreate('URL without a host', { url: 'https://' }),
    invalidCreate('URL with a space', { url: 'https://corpus-bad.example/a b' }),
    invalidCreate('URL with a newline', { url: 'https://corpus-bad.example/\r\nx' }),
    invalidCreate('URL with a tab', { url: 'https://corpus-bad\t.example/' }),
    invalidCreate('URL of 2049 chars', { url: `https://${MARK}.example/`.padEnd(2049, 'a') }),
    invalidChange('javascript: URL', { url: 'javascript:alert(1)' }),
    // hosts the URL format took and the WHATWG parser refuses (they answered 500)
    invalidCreate('URL host 1.2.3.4.5', { url: 'http://1.2.3.4.5/' }),
    invalidCreate('URL host 256.1.1.1', { url: 'https://256.1.1.1/health' }),
    invalidChange('URL host 1.2.3.4.5', { url: 'http://1.2.3.4.5/' }),
    invalidCreate('tcp URL host 1.2.3.4.5', { type: 'tcp', url: 'tcp://1.2.3.4.5:80' }),
    invalidCreate('tls URL host 256.1.1.1', { type: 'tls', url: 'tls://256.1.1.1' }),
    invalidCreate('dns URL host 1.2.3.4.5', { type: 'dns', url: 'dns://1.2.3.4.5' }),
    invalidCreate('webhook host 1.2.3.4.5', { webhooks: ['http://1.2.3.4.5/hook'] }),
    invalidChange('webhook host 1.2.3.4.5', { webhooks: ['http://1.2.3.4.5/hook'] }),
    // port 25 is denied on every host by default (EGRESS_DENY_PORTS): no SMTP from the runners
    create(
      'tcp monitor on port 25',
      good({ type: 'tcp', url: `tcp://${MARK}.example:25`, tcp_send: 'HELO x' }),
      400,
      'TARGET_NOT_ALLOWED',
    ),
    create('http monitor on port 25', good({ url: `http://${MARK}.example:25/` }), 400, 'TARGET_NOT_ALLOWED'),
    create('webhook on port 25', good({ webhooks: [`http://${MARK}.example:25/hook`] }), 400, 'TARGET_NOT_ALLOWED'),
    change('url on port 25', { url: `https://${MARK}.example:25/` }, 400, 'TARGET_NOT_ALLOWED'),
    // monitor types (docs/monitors.md, "Monitor types")
    invalidCreate('unknown type', { type: 'icmp' }),
    invalidCreate('type in capitals', { type: 'TCP' }),
    invalidCreate('tcp type with an https URL', { type: 'tcp' }),
    invalidCreate('tcp URL without a port', { type: 'tcp', url: `tcp://${MARK}.example` }),
    invalidCreate('tcp URL with a path', { type: 'tcp', url: `tcp://${MARK}.example:25/relay` }),
    invalidCreate('tcp URL with a query', { type: 'tcp', url: `tcp://${MARK}.example:25?x=1` }),
    invalidCreate('tcp URL with credentials', { type: 'tcp', url: `tcp://u:p@${MARK}.example:25` }),
    invalidCreate('tcp URL on an http monitor', { url: `tcp://${MARK}.example:25` }),
    invalidCreate('tcp_send on an http monitor', { tcp_send: 'PING' }),
    invalidCreate('tcp_expect on an http monitor', { tcp_expect: 'PONG' }),
    invalidCreate('keyword on a tcp monitor', { type: 'tcp', url: `tcp://${MARK}.example:25`, keyword: 'x' }),
    invalidCreate('headers on a tcp monitor', {
      type: 'tcp',
      url: `tcp://${MARK}.example:25`,
      headers: { 'X-A': 'b' },
    }),
    invalidCreate('empty tcp_send', { type: 'tcp', url: `tcp://${MARK}.example:25`, tcp_send: '' }),
    invalidCreate('tcp_expect of 1025 chars', {
      type: 'tcp',
      url: `tcp://${MARK}.example:25`,
      tcp_expect: 'e'.repeat(1025),
    }),
    create(
      'tcp monitor aimed at a denied literal',
      good({ type: 'tcp', url: 'tcp://169.254.169.254:80' }),
      400,
      'TARGET_NOT_ALLOWED',
    ),
    invalidChange('tcp type on the stored https monitor', { type: 'tcp' }),
    invalidCreate('negative confirm_delay_ms', { confirm_delay_ms: -1 }),
    invalidCreate('confirm_delay_ms of 60001', { confirm_delay_ms: 60_001 }),
    invalidCreate('null confirm_delay_ms', { confirm_delay_ms: null }),
    invalidCreate('confirm_delay_ms and two timeouts longer than the interval', {
      interval_seconds: 10,
      timeout_ms: 4000,
      confirm_delay_ms: 2001,
    }),
    invalidCreate('dns URL with a port', { type: 'dns', url: `dns://${MARK}.example:53` }),
    invalidCreate('dns URL with a path', { type: 'dns', url: `dns://${MARK}.example/a` }),
    invalidCreate('dns record type ANY', { type: 'dns', url: `dns://${MARK}.example`, dns_record_type: 'ANY' }),
    invalidCreate('dns record type in lower case', { type: 'dns', url: `dns://${MARK}.example`, dns_record_type: 'a' }),
    invalidCreate('dns resolver as a name', { type: 'dns', url: `dns://${MARK}.example`, dns_resolver: 'ns.example' }),
    invalidCreate('dns resolver with a bad port', {
      type: 'dns',
      url: `dns://${MARK}.example`,
      dns_resolver: '192.0.2.53:99999',
    }),
    invalidCreate('dns resolver 999.1.1.1', { type: 'dns', url: `dns://${MARK}.example`, dns_resolver: '999.1.1.1' }),
    invalidCreate('21 dns values', {
      type: 'dns',
      url: `dns://${MARK}.example`,
      dns_expected: Array.from({ length: 21 }, (_, i) => `192.0.2.${i}`),
    }),
    invalidCreate('dns value with a newline', { type: 'dns', url: `dns://${MARK}.example`, dns_expected: ['a\nb'] }),
    invalidCreate('dns fields on an http monitor', { dns_expected: ['192.0.2.1'] }),
    create(
      'dns resolver at a denied address',
      good({ type: 'dns', url: `dns://${MARK}.example`, dns_resolver: '169.254.169.254' }),
      400,
      'TARGET_NOT_ALLOWED',
    ),
    invalidCreate('maintenance window ending before it starts', {
      maintenance_windows: [{ from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }],
    }),
    invalidCreate('maintenance window at 25:00', {
      maintenance_windows: [{ start: '25:00', duration_minutes: 60, time_zone: 'UTC' }],
    }),
    invalidCreate('maintenance window of 0 minutes', {
      maintenance_windows: [{ start: '01:00', duration_minutes: 0, time_zone: 'UTC' }],
    }),
    invalidCreate('maintenance window longer than a week', {
      maintenance_windows: [{ start: '01:00', duration_minutes: 10_081, time_zone: 'UTC' }],
    }),
    invalidCreate('maintenance window in an unknown time zone', {
      maintenance_windows: [{ start: '01:00', duration_minutes: 60, time_zone: 'Mars/Olympus_Mons' }],
    }),
    invalidCreate('maintenance window with a time zone of ../../etc', {
      maintenance_windows: [{ start: '01:00', duration_minutes: 60, time_zone: '../../etc/passwd' }],
    }),
    invalidCreate('maintenance window on a day named funday', {
      maintenance_windows: [{ days: ['funday'], start: '01:00', duration_minutes: 60, time_zone: 'UTC' }],
    }),
    invalidCreate('maintenance window mixing both forms', {
      maintenance_windows: [{ from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', start: '01:00' }],
    }),
    invalidCreate('11 maintenance windows', {
      maintenance_windows: Array.from({ length: 11 }, () => ({
        start: '01:00',
        duration_minutes: 60,
        time_zone: 'UTC',
      })),
    }),
    // heartbeat monitors (docs/monitors.md, "Heartbeat monitors")
    invalidCreate('heartbeat monitor with an https URL', { type: 'heartbeat' }),
    invalidCreate('heartbeat_grace_seconds on an http monitor', { heartbeat_grace_seconds: 60 }),
    invalidCreate('negative heartbeat_grace_seconds', {
      type: 'heartbeat',
      url: undefined,
      heartbeat_grace_seconds: -1,
    }),
    invalidCreate('heartbeat_grace_seconds over a week', {
      type: 'heartbeat',
      url: undefined,
      heartbeat_grace_seconds: 604_801,
    }),
    invalidCreate('heartbeat monitor from two locations', {
      type: 'heartbeat',
      url: undefined,
      locations: ['eu-west', 'us-east'],
    }),
    invalidCreate('heartbeat monitor with confirm_delay_ms', {
      type: 'heartbeat',
      url: undefined,
      confirm_delay_ms: 500,
    }),
    invalidCreate('heartbeat:// URL on an http monitor', { url: 'heartbeat://mon_0123456789abcdef' }),
    invalidCreate('client-chosen heartbeat_token', {
      heartbeat_token: `hb_default_0123456789abcdef_${'0'.repeat(32)}`,
    }),
    invalidCreate('no url on an http monitor', { url: undefined }),
    // locations and quorum (docs/monitors.md, "Locations and quorum")
    invalidCreate('no locations', { locations: [] }),
    invalidCreate('9 locations', { locations: Array.from({ length: 9 }, (_, i) => `loc-${i}`) }),
    invalidCreate('the same location twice', { locations: ['eu-west', 'eu-west'] }),
    invalidCreate('location in capitals', { locations: ['EU-West'] }),
    invalidCreate('location with a slash', { locations: ['eu/west'] }),
    invalidCreate('location of 33 chars', { locations: ['l'.repeat(33)] }),
    invalidCreate('quorum 0', { locations: ['eu-west', 'us-east'], quorum: 0 }),
    invalidCreate('quorum above the locations', { locations: ['eu-west', 'us-east'], quorum: 3 }),
    invalidCreate('fractional quorum', { locations: ['eu-west', 'us-east'], quorum: 1.5 }),
    invalidChange('quorum above the stored locations', { quorum: 2 }),
    invalidCreate('tls URL with a path', { type: 'tls', url: `tls://${MARK}.example/health` }),
    invalidCreate('tls type with an https URL', { type: 'tls' }),
    invalidCreate('tls_min_days on an http monitor', { tls_min_days: 14 }),
    invalidCreate('negative tls_min_days', { type: 'tls', url: `tls://${MARK}.example`, tls_min_days: -1 }),
    invalidCreate('tls_min_days of 3651', { type: 'tls', url: `tls://${MARK}.example`, tls_min_days: 3651 }),
    invalidCreate('fractional tls_min_days', { type: 'tls', url: `tls://${MARK}.example`, tls_min_days: 1.5 }),
    create(
      'tls monitor aimed at a denied literal',
      good({ type: 'tls', url: 'tls://10.0.0.1' }),
      400,
      'TARGET_NOT_ALLOWED',
    ),
    // keyword and body
    invalidCreate('empty keyword', { keyword: '' }),
    invalidCreate('keyword of 1025 chars', { keyword: 'k'.repeat(1025) }),
    invalidCreate('body on a GET check', { body: 'x' }),
    invalidCreate('body on a HEAD check', { method: 'HEAD', body: '' }),
    invalidCreate('body of 65537 chars', { method: 'POST', body: 'b'.repeat(65_537) }),
    invalidChange('body on the stored GET check', { body: 'x' }),
    // headers
    invalidCreate('21 headers', {
      headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])),
    }),
    invalidCreate('header name with CR LF', { headers: { 'X-A\r\nX-Injected': 'v' } }),
    invalidCreate('header name with a space', { headers: { 'X A': 'v' } }),
    invalidCreate('header name with a colon', { headers: { 'X-A:': 'v' } }),
    invalidCreate('empty header name', { headers: { '': 'v' } }),
    invalidCreate('header name of 129 chars', { headers: { ['X'.repeat(129)]: 'v' } }),
    invalidCreate('header value with CR LF', { headers: { 'X-A': 'v\r\nSet-Cookie: session=evil' } }),
    invalidCreate('header value with LF', { headers: { 'X-A': 'v\nX-B: w' } }),
    invalidCreate('header value with NUL', { headers: { 'X-A': 'v\u0000w' } }),
    invalidCreate('header value of 1025 chars', { headers: { 'X-A': 'v'.repeat(1025) } }),
    invalidCreate('header value a number', { headers: { 'X-A': 1 } }),
    create(
      '__proto__ header with an object value',
      JSON.stringify(good()).replace(/}$/, ',"headers":{"__proto__":{"X-A":"v"}}}'),
      400,
      'VALIDATION_FAILED',
    ),
    invalidChange('header name with CR LF', { headers: { 'X-A\r\nX-B': 'v' } }),
    // webhooks and secrets
    invalidCreate('6 webhooks', { webhooks: Array.from({ length: 6 }, (_, i) => `https://${MARK}.example/hook/${i}`) }),
    invalidCreate('the same webhook twice', { webhooks: [`https://${MARK}.example/h`, `https://${MARK}.example/h`] }),
    invalidCreate('javascript: webhook', { webhooks: ['javascript:alert(1)'] }),
    invalidCreate('file: webhook', { webhooks: ['file:///etc/passwd'] }),
    invalidCreate('webhook with a space', { webhooks: [`https://${MARK}.example/a b`] }),
    invalidCreate('webhook secret of 15 chars', { webhook_secret: 's'.repeat(15) }),
    invalidCreate('webhook secret of 257 chars', { webhook_secret: 's'.repeat(257) }),
    invalidCreate('webhook secret with a space', { webhook_secret: 'secret with spaces in it' }),
    // fields the client does not choose, and prototype keys
    invalidCreate('client-chosen id', { id: 'corpus-bad-id' }),
    invalidCreate('created_at', { created_at: '2020-01-01T00:00:00Z' }),
    invalidCreate('version', { version: 999_999_999 }),
    invalidCreate('unknown field', { admin: true }),
    create(
      '__proto__ key',
      JSON.stringify(good()).replace(/}$/, ',"__proto__":{"paused":false}}'),
      400,
      'VALIDATION_FAILED',
    ),
    create(
      'constructor key',
      JSON.stringify(good()).replace(/}$/, ',"constructor":{"prototype":{"x":1}}}'),
      400,
      'VALIDATION_FAILED',
    ),
    create('name given twice', JSON.stringify(good()).replace(/}$/, ',"name":42}'), 400, 'VALIDATION_FAILED'),
    invalidChange('client-chosen id', { id: 'tenant-b-monitor' }),
    invalidChange('unknown field', { owner: 'me' }),
    // dropped_secrets is in a PATCH's answer only: a request may not set it
    invalidCreate('dropped_secrets (an answer field)', { dropped_secrets: [] }),
    invalidChange('dropped_secrets (an answer field)', { dropped_secrets: ['headers.Authorization'] }),
    change('__proto__ key', '{"__proto__":{"paused":false}}', 400, 'VALIDATION_FAILED'),
    change('constructor key', '{"constructor":{"name":"x"}}', 400, 'VALIDATION_FAILED'),
    change('empty object', {}, 400, 'VALIDATION_FAILED'),
    change('empty body', '', 400, 'INVALID_JSON'),
    change('truncated JSON', '{"paused":tr', 400, 'INVALID_JSON'),
    change('array', [{ paused: false }], 400, 'VALIDATION_FAILED'),
    change('null', 'null', 400, 'VALIDATION_FAILED'),
    // sizes, nesting, encodings
    create('body of 300 KiB', good({ method: 'POST', body: 'b'.repeat(300 * 1024) }), 413, 'PAYLOAD_TOO_LARGE'),
    create('Content-Length lies (too big)', good(), 413, 'PAYLOAD_TOO_LARGE', { 'content-length': '99999999' }),
    create('body of 12 MB', 'x'.repeat(12 * 1024 * 1024), 413, 'PAYLOAD_TOO_LARGE'),
    change('body of 300 KiB', { name: 'n'.repeat(300 * 1024) }, 413, 'PAYLOAD_TOO_LARGE'),
    create(
      'nesting depth 9',
      JSON.stringify(good()).replace(/}$/, ',"x":' + '{"a":'.repeat(8) + '1' + '}'.repeat(8) + '}'),
      400,
      'VALIDATION_FAILED',
    ),
    create('nesting depth 100000 (arrays)', '['.repeat(100_000) + ']'.repeat(100_000), 400, 'VALIDATION_FAILED'),
    change('nesting depth 9', '{"headers":' + '{"a":'.repeat(8) + '"v"' + '}'.repeat(9), 400, 'VALIDATION_FAILED'),
    create('gzip bomb', gzipSync(Buffer.alloc(30 * 1024 * 1024, 0x20)), 413, 'PAYLOAD_TOO_LARGE', {
      'content-encoding': 'gzip',
    }),
    create(
      'gzip ratio over 100',
      gzipSync(Buffer.from(JSON.stringify(good()) + ' '.repeat(200_000))),
      413,
      'PAYLOAD_TOO_LARGE',
      { 'content-encoding': 'gzip' },
    ),
    create('gzip header but plain body', good(), 400, 'INVALID_JSON', { 'content-encoding': 'gzip' }),
    create('deflate encoding', good(), 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-encoding': 'deflate' }),
    create('br encoding', good(), 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-encoding': 'br' }),
    create('no Content-Type', good(), 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': '' }),
    create('text/plain', good(), 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'text/plain' }),
    create('form content type', 'name=corpus-bad&url=https://corpus-bad.example/', 415, 'UNSUPPORTED_MEDIA_TYPE', {
      'content-type': 'application/x-www-form-urlencoded',
    }),
    create('multipart content type', '--x--', 415, 'UNSUPPORTED_MEDIA_TYPE', {
      'content-type': 'multipart/form-data; boundary=x',
    }),
    create('XML content type', '<monitor/>', 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'application/xml' }),
    change('merge-patch content type', { paused: false }, 415, 'UNSUPPORTED_MEDIA_TYPE', {
      'content-type': 'application/merge-patch+json',
    }),
    change('text/plain', { paused: false }, 415, 'UNSUPPORTED_MEDIA_TYPE', { 'content-type': 'text/plain' }),
    mon('a monitor in the body of a GET is ignored', 'GET', '/api/monitors', good(), 200),
    // --- monitor registry: query parameters
    mon('unknown query parameter', 'POST', '/api/monitors?dry_run=1', good(), 400, 'INVALID_PARAMETER'),
    mon('unknown parameter', 'GET', '/api/monitors?offset=10', undefined, 400, 'INVALID_PARAMETER'),
    mon('__proto__ parameter', 'GET', '/api/monitors?__proto__[x]=1', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=0', 'GET', '/api/monitors?limit=0', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=1001', 'GET', '/api/monitors?limit=1001', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=-1', 'GET', '/api/monitors?limit=-1', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=1.5', 'GET', '/api/monitors?limit=1.5', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=abc', 'GET', '/api/monitors?limit=abc', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit of 40 nines', 'GET', `/api/monitors?limit=${'9'.repeat(40)}`, undefined, 400, 'INVALID_PARAMETER'),
    mon('limit given twice', 'GET', '/api/monitors?limit=1&limit=2', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit as array', 'GET', '/api/monitors?limit[]=1', undefined, 400, 'INVALID_PARAMETER'),
    mon('empty cursor', 'GET', '/api/monitors?cursor=', undefined, 400, 'INVALID_PARAMETER'),
    mon('cursor not base64', 'GET', '/api/monitors?cursor=!!!!', undefined, 400, 'INVALID_PARAMETER'),
    mon(
      'cursor with SQL inside',
      'GET',
      `/api/monitors?cursor=${Buffer.from("m1' OR '1'='1").toString('base64url')}`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    mon('cursor of 6000 chars', 'GET', `/api/monitors?cursor=${'A'.repeat(6000)}`, undefined, 400, 'INVALID_PARAMETER'),
    mon('unknown parameter', 'GET', '/api/monitors/m1?fields=webhook_secret', undefined, 400, 'INVALID_PARAMETER'),
    mon('unknown parameter', 'PATCH', '/api/monitors/m1?upsert=1', { paused: false }, 400, 'INVALID_PARAMETER'),
    mon('unknown parameter', 'DELETE', '/api/monitors/m1?force=1', undefined, 400, 'INVALID_PARAMETER'),
    mon('unknown parameter', 'GET', '/api/monitors/m1/incidents?from=2026-01-01', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=0', 'GET', '/api/monitors/m1/incidents?limit=0', undefined, 400, 'INVALID_PARAMETER'),
    mon('limit=1001', 'GET', '/api/monitors/m1/incidents?limit=1001', undefined, 400, 'INVALID_PARAMETER'),
    mon(
      'limit with SQL',
      'GET',
      `/api/monitors/m1/incidents?limit=${encodeURIComponent('1; DROP TABLE alerts')}`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    mon('status=closed', 'GET', '/api/monitors/m1/incidents?status=closed', undefined, 400, 'INVALID_PARAMETER'),
    mon('status=OPEN', 'GET', '/api/monitors/m1/incidents?status=OPEN', undefined, 400, 'INVALID_PARAMETER'),
    mon(
      'status given twice',
      'GET',
      '/api/monitors/m1/incidents?status=open&status=resolved',
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    mon('status list', 'GET', '/api/monitors/m1/incidents?status=open,resolved', undefined, 400, 'INVALID_PARAMETER'),
    mon(
      'status with SQL',
      'GET',
      `/api/monitors/m1/incidents?status=${encodeURIComponent("open' OR 1=1 --")}`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    ...[
      'since=2026-01-01',
      'limit=0',
      'limit=1001',
      'status=retried',
      'status=delivered&status=failed',
      `status=${encodeURIComponent("failed' OR 1=1 --")}`,
      `alert_id=${encodeURIComponent("x' OR '1'='1")}`,
      `alert_id=${'a'.repeat(129)}`,
      'cursor=not-a-cursor',
      `cursor=${Buffer.from(JSON.stringify([1, "x' OR 1=1"])).toString('base64url')}`,
      `cursor=${Buffer.from(JSON.stringify([-1, 'x'])).toString('base64url')}`,
    ].map((qs) =>
      mon(
        `deliveries ${qs.slice(0, 40)}`,
        'GET',
        `/api/monitors/m1/webhook-deliveries?${qs}`,
        undefined,
        400,
        'INVALID_PARAMETER',
      ),
    ),
    // --- monitor registry: ids in the path
    ...[
      "x' OR '1'='1",
      "x'; DROP TABLE monitors; --",
      '..%2F..%2Fetc%2Fpasswd',
      '..',
      'x%00y',
      'x%0D%0Ay',
      '-leading-dash',
      'a'.repeat(129),
    ].flatMap((id) => [
      mon(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        'GET',
        `/api/monitors/${pathPart(id)}`,
        undefined,
        400,
        'INVALID_PARAMETER',
      ),
      mon(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        'PATCH',
        `/api/monitors/${pathPart(id)}`,
        { paused: false },
        400,
        'INVALID_PARAMETER',
      ),
      mon(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        'DELETE',
        `/api/monitors/${pathPart(id)}`,
        undefined,
        400,
        'INVALID_PARAMETER',
      ),
      mon(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        'GET',
        `/api/monitors/${pathPart(id)}/incidents`,
        undefined,
        400,
        'INVALID_PARAMETER',
      ),
      mon(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        'GET',
        `/api/monitors/${pathPart(id)}/webhook-deliveries`,
        undefined,
        400,
        'INVALID_PARAMETER',
      ),
    ]),
    // --- monitor registry: unknown monitors
    mon('unknown monitor', 'GET', `/api/monitors/${missing}`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon('unknown monitor', 'PATCH', `/api/monitors/${missing}`, { paused: false }, 404, 'MONITOR_NOT_FOUND'),
    mon('unknown monitor', 'DELETE', `/api/monitors/${missing}`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon('unknown monitor', 'GET', `/api/monitors/${missing}/incidents`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon('unknown monitor', 'GET', `/api/monitors/${missing}/webhook-deliveries`, undefined, 404, 'MONITOR_NOT_FOUND'),
    mon(
      'unknown monitor, status=open',
      'GET',
      `/api/monitors/${missing}/incidents?status=open`,
      undefined,
      404,
      'MONITOR_NOT_FOUND',
    ),
    list('unknown monitor', `/api/monitors/${missing}/checks`, {}, 404, 'MONITOR_NOT_FOUND'),
    list('unknown monitor', `/api/monitors/${missing}/checks/summary`, {}, 404, 'MONITOR_NOT_FOUND'),
    list('unknown monitor', `/api/monitors/${missing}/checks/export`, {}, 404, 'MONITOR_NOT_FOUND'),
    // --- monitor registry: wrong methods
    mon('PUT (PATCH only)', 'PUT', '/api/monitors/m1', good(), 405, 'METHOD_NOT_ALLOWED'),
    mon('POST on a monitor', 'POST', '/api/monitors/m1', good(), 405, 'METHOD_NOT_ALLOWED'),
    mon('DELETE on the collection', 'DELETE', '/api/monitors', undefined, 405, 'METHOD_NOT_ALLOWED'),
    mon('PATCH on the collection', 'PATCH', '/api/monitors', { paused: true }, 405, 'METHOD_NOT_ALLOWED'),
    mon('PUT on the collection', 'PUT', '/api/monitors', [good()], 405, 'METHOD_NOT_ALLOWED'),
    mon('POST on incidents', 'POST', '/api/monitors/m1/incidents', {}, 405, 'METHOD_NOT_ALLOWED'),
    mon('DELETE on incidents', 'DELETE', '/api/monitors/m1/incidents', undefined, 405, 'METHOD_NOT_ALLOWED'),
    mon('POST on webhook deliveries', 'POST', '/api/monitors/m1/webhook-deliveries', {}, 405, 'METHOD_NOT_ALLOWED'),
  ];

  it('answers every hostile request with its documented status and code, and never a 5xx', async () => {
    const keys: Record<string, string> = {
      '@access': access,
      '@revoked': revoked,
      '@api': api,
      '@noScope': noScope,
      '@otherTenant': otherTenant,
      '@monitors': monitors,
      '@restricted': restricted,
      '@expiredApi': expiredApi,
      '@expiredAccess': expiredAccess,
    };
    // Expired keys answer KEY_EXPIRED once their second has passed.
    await eventually('the expired keys expired', async () => {
      const r = await fetch(`${query.url}/api/monitors/m1/checks`, {
        headers: { authorization: `Bearer ${expiredApi}` },
      });
      return r.status === 401 && ((await r.json()) as { code: string }).code === 'KEY_EXPIRED' ? true : undefined;
    });
    const fill = (s: string): string =>
      s.replace(
        /@(access|revoked|api|noScope|otherTenant|monitors|restricted|expiredApi|expiredAccess)\b/g,
        (m) => keys[m]!,
      );
    const cases = corpus();
    expect(cases.length).to.be.greaterThan(100);
    // Every case runs, so one run lists every wrong answer (here and in RELIABILITY.md).
    const wrong: string[] = [];
    for (const c of cases) {
      const real: Case = {
        ...c,
        path: fill(c.path),
        // an empty header value means: do not send that header
        headers: Object.fromEntries(
          Object.entries(c.headers ?? {})
            .filter(([, v]) => v !== '')
            .map(([k, v]) => [k, fill(v)]),
        ),
      };
      const a = await send(c.service === 'gateway' ? gateway.url : query.url, real);
      const expected = `${c.status}${c.code ? ` ${c.code}` : ''}`;
      const got = `${a.status}${c.code ? ` ${a.code}` : ''}`;
      results.push({ name: c.name, expected, got });
      if (a.status >= 500) wrong.push(`${c.name}: a ${a.status} (${a.code})`);
      else if (got !== expected) wrong.push(`${c.name}: expected ${expected}, got ${got}`);
      else if (a.status >= 400 && !c.path.includes('pixel.gif') && a.success !== false) {
        wrong.push(`${c.name}: success is not false`);
      }
    }
    expect(wrong, wrong.join('\n')).to.deep.equal([]);
  });

  it('creates, changes and deletes no monitor on any bad request', async () => {
    const now = await registry();
    const leaked = now.listed.filter((m) => m.name.includes(MARK) || m.url.includes(MARK));
    expect(leaked, 'monitors created by bad requests').to.deep.equal([]);
    expect(now.listed.map((m) => m.id).sort()).to.deep.equal(registryBefore.listed.map((m) => m.id).sort());
    expect(now.shown, 'm1 and the tenant monitors as the corpus found them').to.deep.equal(registryBefore.shown);
  });

  it('never writes a key to a log line, even one sent in the query string', () => {
    const logs = [...gateway.logs.lines, ...query.logs.lines].join('\n');
    expect(logs.length).to.be.greaterThan(1000);
    for (const k of [access, revoked, api, noScope, otherTenant, monitors, restricted])
      expect(logs).not.to.contain(k.split('_')[2]!);
  });
});
