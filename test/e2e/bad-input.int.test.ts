import { gzipSync } from 'node:zlib';
import { request } from 'node:http';
import { expect } from 'chai';
import { writeSection } from '../../tools/devstack/sections.js';
import {
  eventually,
  newKey,
  registerMonitors,
  RELIABILITY_TITLE,
  runGateway,
  runQuery,
  type Running,
} from '../support/fixtures.js';

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
  const results: { name: string; expected: string; got: string }[] = [];

  before(async () => {
    [gateway, query] = await Promise.all([runGateway(), runQuery()]);
    await registerMonitors('m1', 'tenant-a-monitor', 'tenant-b-monitor');
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
    const { revokeKey } = await import('@telemetry/runtime');
    const { adminClickHouse, testStack } = await import('../support/fixtures.js');
    const ch = adminClickHouse();
    await revokeKey(ch, testStack().database, revoked.split('_')[1]!);
    await ch.close();
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
      return a.status === 200 && b.status === 200 && r.status === 401 ? true : undefined;
    });
  });

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
    // --- header abuse
    post('huge X-Request-Id is replaced', { 'x-request-id': 'x'.repeat(5000) }, body([ev()]), 200),
    post('X-Request-Id with CRLF-ish bytes is replaced', { 'x-request-id': 'a%0d%0aSet-Cookie: x' }, body([ev()]), 200),
    post('charset latin1 declared', { 'content-type': 'application/json; charset=latin1' }, body([ev()]), 200),
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
      'other tenant’s monitor',
      '/api/monitors/tenant-b-monitor/checks',
      { authorization: 'Bearer @otherTenant' },
      403,
      'MONITOR_NOT_ALLOWED',
    ),
    list(
      'other tenant’s summary',
      '/api/monitors/tenant-b-monitor/checks/summary',
      { authorization: 'Bearer @otherTenant' },
      403,
      'MONITOR_NOT_ALLOWED',
    ),
    list(
      'other tenant’s export',
      '/api/monitors/tenant-b-monitor/checks/export',
      { authorization: 'Bearer @otherTenant' },
      403,
      'MONITOR_NOT_ALLOWED',
    ),
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
    list('unknown route', '/api/monitors', {}, 404, 'NOT_FOUND'),
  ];

  it('answers every hostile request with its documented status and code, and never a 5xx', async () => {
    const keys: Record<string, string> = {
      '@access': access,
      '@revoked': revoked,
      '@api': api,
      '@noScope': noScope,
      '@otherTenant': otherTenant,
    };
    const fill = (s: string): string => s.replace(/@(access|revoked|api|noScope|otherTenant)/g, (m) => keys[m]!);
    const cases = corpus();
    expect(cases.length).to.be.greaterThan(100);
    for (const c of cases) {
      const real: Case = {
        ...c,
        path: fill(c.path),
        headers: Object.fromEntries(Object.entries(c.headers ?? {}).map(([k, v]) => [k, fill(v)])),
      };
      if (real.headers?.authorization === '') delete real.headers.authorization;
      if (real.headers?.['x-access-key'] === '') delete real.headers['x-access-key'];
      const a = await send(c.service === 'gateway' ? gateway.url : query.url, real);
      const expected = `${c.status}${c.code ? ` ${c.code}` : ''}`;
      const got = `${a.status}${c.code ? ` ${a.code}` : ''}`;
      results.push({ name: c.name, expected, got });
      expect(a.status, c.name).to.be.below(500);
      expect(got, c.name).to.equal(expected);
      if (a.status >= 400 && c.path.includes('pixel.gif') === false) expect(a.success, c.name).to.equal(false);
    }
  });

  it('never writes a key to a log line, even one sent in the query string', () => {
    const logs = [...gateway.logs.lines, ...query.logs.lines].join('\n');
    expect(logs.length).to.be.greaterThan(1000);
    for (const k of [access, revoked, api, noScope, otherTenant]) expect(logs).not.to.contain(k.split('_')[2]!);
  });
});
