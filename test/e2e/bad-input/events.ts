/** Bad-input cases: POST /api/telemetry/events: keys, bodies, limits and encodings, header abuse. */
import { gzipSync } from 'node:zlib';
import { type Case, ev, body, post } from './case.js';

export const eventCases = (): Case[] => [
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
  post('key with unicode', { 'x-access-key': encodeURIComponent('tk_ключ') }, body([ev()]), 401, 'INVALID_CREDENTIALS'),
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
  // --- identity (anonymous_id, user_id: 1 to 256 characters, no control characters)
  post('anonymous_id 257 chars', {}, body([ev({ anonymous_id: 'a'.repeat(257) })]), 400, 'VALIDATION_FAILED'),
  post('user_id 10000 chars', {}, body([ev({ user_id: 'u'.repeat(10_000) })]), 400, 'VALIDATION_FAILED'),
  post('user_id with newline', {}, body([ev({ user_id: 'a\nb' })]), 400, 'VALIDATION_FAILED'),
  post('anonymous_id with NUL', {}, body([ev({ anonymous_id: 'a\u0000' })]), 400, 'VALIDATION_FAILED'),
  post('user_id with DEL', {}, body([ev({ user_id: 'a\u007f' })]), 400, 'VALIDATION_FAILED'),
  post('user_id with escape sequence', {}, body([ev({ user_id: '\u001b[31mred' })]), 400, 'VALIDATION_FAILED'),
  post('anonymous_id empty', {}, body([ev({ anonymous_id: '' })]), 400, 'VALIDATION_FAILED'),
  post('user_id is an object', {}, body([ev({ user_id: { $ne: null } })]), 400, 'VALIDATION_FAILED'),
  post('user_id is a number', {}, body([ev({ user_id: 42 })]), 400, 'VALIDATION_FAILED'),
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
  // Addresses and user agents (docs/enrichment.md): never refused; a spoofed or malformed
  // X-Forwarded-For is ignored (the peer is the address), a bad User-Agent is left out.
  // test/e2e/enrichment-gateway.int.test.ts reads what the messages then carry.
  post(
    'spoofed X-Forwarded-For from an untrusted peer',
    { 'x-forwarded-for': '10.0.0.1, 127.0.0.1' },
    body([ev()]),
    200,
  ),
  post('malformed X-Forwarded-For', { 'x-forwarded-for': 'unknown, 1.2.3.4:80, [::1], ,,' }, body([ev()]), 200),
  post('4 KB X-Forwarded-For', { 'x-forwarded-for': '1.2.3.4, '.repeat(400) }, body([ev()]), 200),
  post('4 KB User-Agent', { 'user-agent': 'Mozilla/5.0 '.repeat(340) }, body([ev()]), 200),
  post('User-Agent of latin1 bytes and a tab', { 'user-agent': 'Bot\t\xff\xfe' }, body([ev()]), 200),
];
