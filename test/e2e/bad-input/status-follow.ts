/**
 * Bad-input cases: status pages people follow (docs/api.md, "Status reports, subscribers,
 * …"): the owner's reports, subscribers and custom domains, and what anyone may send
 * without a key: subscriptions (emails, webhooks), confirmation and unsubscribe tokens, the
 * history, feeds, badges and other hosts. Each is refused with its documented code and, for
 * VALIDATION_FAILED, the JSON pointer of the field (`expect.path`).
 *
 * They go to the `follow` query service of the runner: its egress policy allows only the
 * challenge receiver's loopback port (every other notation of loopback is denied, and aims
 * at the trap's port: the runner checks that the trap got nothing), its resolver is a
 * loopback DNS server, its subscription limits are high enough for the corpus, and
 * OPERATOR_HOSTS names FOLLOW.operator. The rows the cases name: status-follow-fixtures.ts.
 */
import { buildOpenApi } from '@telemetry/contract';
import { parseSealingKeys } from '@telemetry/platform';
import { SubscriptionLinks } from '@telemetry/store';
import { RUN_SECRETS_KEYS } from '../../../harness/processes.js';
import { FOREIGN, invalidChange, invalidCreate, MARK, MISSING, mon, type Case } from './case.js';
import { FOLLOW } from './status-follow-fixtures.js';

export {
  FOLLOW,
  followFixtures,
  followRows,
  challengeReceiver,
  trap,
  LoopbackServer,
} from './status-follow-fixtures.js';

/** What the runner knows only once it started its loopback servers. */
export interface FollowEnv {
  /** The challenge receiver's port (the one the follow service's egress policy allows). */
  receiverPort: number;
  /** The trap's port (denied: nothing may reach it). */
  trapPort: number;
}

const P = FOLLOW.page;
const O = FOLLOW.other;
const noKey = { authorization: '' };
const MISSING_REPORT = 'rpt_00000000000000000000';
const MISSING_SUBSCRIBER = 'sub_00000000000000000000';
const VF = 'VALIDATION_FAILED';

/** A request to the follow service: with the monitors:read+write key unless told; `field`: the one refused. */
function req(
  ...[name, method, path, b, status, code, headers = {}, field]: [...Parameters<typeof mon>, string?]
): Case {
  const c = mon(name, method, path, b, status, code, headers);
  return {
    ...c,
    name: `${method} ${path.split('?')[0]!.replace(/(rpt|sub)_[a-z0-9]+/, '{id}')}: ${name}`,
    service: 'follow',
    expect: { ...c.expect, ...(field !== undefined ? { path: field } : {}) },
  };
}
/** 400 VALIDATION_FAILED at `field`. */
const invalid = (name: string, method: string, path: string, b: unknown, field: string, headers = {}): Case =>
  req(name, method, path, b, 400, VF, headers, field);

const report = { title: `${MARK} report`, message: 'looking into it' };
const big = (n: number): string => 'x'.repeat(n);

function ownerCases(): Case[] {
  const reports = `/api/status-pages/${P}/reports`;
  const one = `${reports}/${FOLLOW.reports.page}`;
  const updates = `${one}/updates`;
  const bad = (name: string, over: object, field: string): Case =>
    invalid(`report, ${name}`, 'POST', reports, { ...report, ...over }, field);
  return [
    // --- credentials and scopes (as the page's own routes)
    req('no key', 'GET', reports, undefined, 401, 'MISSING_CREDENTIALS', noKey),
    req('a checks:read key', 'GET', reports, undefined, 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @api' }),
    req('a viewer key', 'POST', reports, report, 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @viewer' }),
    req('a key limited to monitors', 'POST', reports, report, 403, 'MONITOR_NOT_ALLOWED', {
      authorization: 'Bearer @restricted',
    }),
    req('a viewer key', 'DELETE', one, undefined, 403, 'INSUFFICIENT_SCOPE', { authorization: 'Bearer @viewer' }),
    req(
      'a viewer key',
      'POST',
      `/api/status-pages/${P}/domains`,
      { hostname: 'status.corpus-bad.example' },
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @viewer',
      },
    ),
    req(
      'a viewer key',
      'DELETE',
      `/api/status-pages/${P}/subscribers/${FOLLOW.subscribers.active.id}`,
      undefined,
      403,
      'INSUFFICIENT_SCOPE',
      {
        authorization: 'Bearer @viewer',
      },
    ),
    // --- pages that are not the key's
    req(
      'no such page',
      'GET',
      '/api/status-pages/corpus-missing-page/reports',
      undefined,
      404,
      'STATUS_PAGE_NOT_FOUND',
    ),
    ...['reports', 'subscribers', 'domains'].map((what) =>
      req(
        'another tenant’s page',
        'GET',
        `/api/status-pages/${FOLLOW.foreign}/${what}`,
        undefined,
        404,
        'STATUS_PAGE_NOT_FOUND',
      ),
    ),
    req(
      'another tenant’s page',
      'POST',
      `/api/status-pages/${FOLLOW.foreign}/reports`,
      report,
      404,
      'STATUS_PAGE_NOT_FOUND',
    ),
    // --- the list's parameters
    req('limit 0', 'GET', `${reports}?limit=0`, undefined, 400, 'INVALID_PARAMETER'),
    req('limit over the maximum', 'GET', `${reports}?limit=101`, undefined, 400, 'INVALID_PARAMETER'),
    req('limit not a number', 'GET', `${reports}?limit=ten`, undefined, 400, 'INVALID_PARAMETER'),
    req('a forged cursor', 'GET', `${reports}?cursor=corpus-not-a-cursor`, undefined, 400, 'INVALID_PARAMETER'),
    req('an unknown parameter', 'GET', `${reports}?state=resolved`, undefined, 400, 'INVALID_PARAMETER'),
    // --- a new report's body
    bad('title over 200 characters', { title: big(201) }, '/title'),
    bad('title of spaces', { title: '   ' }, '/title'),
    bad('title empty', { title: '' }, '/title'),
    bad('title with a control character', { title: 'down\u0007' }, '/title'),
    bad('title a number', { title: 42 }, '/title'),
    bad('message over 5000 characters', { message: big(5001) }, '/message'),
    bad('message with a NUL', { message: 'a\u0000b' }, '/message'),
    bad('impact unknown', { impact: 'catastrophic' }, '/impact'),
    bad('state unknown', { state: 'fixed' }, '/state'),
    bad('a monitor of the tenant not on the page', { monitor_ids: ['tenant-a-monitor'] }, '/monitor_ids/0'),
    bad('an unknown monitor, second', { monitor_ids: ['m1', MISSING] }, '/monitor_ids/1'),
    bad('another tenant’s monitor', { monitor_ids: [FOREIGN] }, '/monitor_ids/0'),
    bad('a monitor twice', { monitor_ids: ['m1', 'm1'] }, '/monitor_ids'),
    bad('monitor_ids a string', { monitor_ids: 'm1' }, '/monitor_ids'),
    bad('an hour ahead', { at: new Date(Date.now() + 3_600_000).toISOString() }, '/at'),
    bad('at not a time', { at: 'yesterday' }, '/at'),
    bad('draft a string', { draft: 'yes' }, '/draft'),
    invalid('report, no message', 'POST', reports, { title: `${MARK} report` }, '/message'),
    invalid('report, an unknown field', 'POST', reports, { ...report, severity: 1 }, '/severity'),
    invalid('report, null', 'POST', reports, 'null', '/'),
    req('report, not JSON', 'POST', reports, '{"title":', 400, 'INVALID_JSON'),
    req('report, text/plain', 'POST', reports, 'title', 415, 'UNSUPPORTED_MEDIA_TYPE', {
      'content-type': 'text/plain',
    }),
    req('report, a body of 1 MB', 'POST', reports, { ...report, message: big(1_000_000) }, 413, 'PAYLOAD_TOO_LARGE'),
    // --- one report
    req('an unknown report', 'GET', `${reports}/${MISSING_REPORT}`, undefined, 404, 'REPORT_NOT_FOUND'),
    req('another page’s report', 'GET', `${reports}/${FOLLOW.reports.other}`, undefined, 404, 'REPORT_NOT_FOUND'),
    req('a malformed id', 'GET', `${reports}/..%2F..%2Fsubscribers`, undefined, 404, 'REPORT_NOT_FOUND'),
    req(
      'an id of upper case',
      'GET',
      `${reports}/${FOLLOW.reports.page.toUpperCase()}`,
      undefined,
      404,
      'REPORT_NOT_FOUND',
    ),
    req('an unknown report', 'PATCH', `${reports}/${MISSING_REPORT}`, { title: 'x' }, 404, 'REPORT_NOT_FOUND'),
    req('another page’s report', 'DELETE', `${reports}/${FOLLOW.reports.other}`, undefined, 404, 'REPORT_NOT_FOUND'),
    req('an unknown report', 'DELETE', `${reports}/${MISSING_REPORT}`, undefined, 404, 'REPORT_NOT_FOUND'),
    invalid('nothing to change', 'PATCH', one, {}, '/'),
    invalid('back to a draft', 'PATCH', one, { draft: true }, '/draft'),
    invalid('title over 200 characters', 'PATCH', one, { title: big(201) }, '/title'),
    invalid('a monitor not on the page', 'PATCH', one, { monitor_ids: ['tenant-b-monitor'] }, '/monitor_ids/0'),
    invalid('the state (updates say it)', 'PATCH', one, { state: 'resolved' }, '/state'),
    // --- updates
    req(
      'update, an unknown report',
      'POST',
      `${reports}/${MISSING_REPORT}/updates`,
      { state: 'identified', message: 'x' },
      404,
      'REPORT_NOT_FOUND',
    ),
    req(
      'update, another page’s report',
      'POST',
      `${reports}/${FOLLOW.reports.other}/updates`,
      { state: 'identified', message: 'x' },
      404,
      'REPORT_NOT_FOUND',
    ),
    invalid('update, no state', 'POST', updates, { message: 'x' }, '/state'),
    invalid('update, state unknown', 'POST', updates, { state: 'closed', message: 'x' }, '/state'),
    invalid(
      'update, message over 5000 characters',
      'POST',
      updates,
      { state: 'identified', message: big(5001) },
      '/message',
    ),
    invalid('update, message of newlines', 'POST', updates, { state: 'identified', message: '\n\n\t' }, '/message'),
    invalid(
      'update, a day ahead',
      'POST',
      updates,
      { state: 'identified', message: 'x', at: new Date(Date.now() + 86_400_000).toISOString() },
      '/at',
    ),
    req(
      'update, a body of 1 MB',
      'POST',
      updates,
      { state: 'identified', message: big(1_000_000) },
      413,
      'PAYLOAD_TOO_LARGE',
    ),
    // --- from an incident
    req(
      'from an unknown incident',
      'POST',
      `${reports}/from-incident`,
      { incident_id: 'corpus-missing-incident' },
      404,
      'INCIDENT_NOT_FOUND',
    ),
    invalid(
      'from an incident id with a slash',
      'POST',
      `${reports}/from-incident`,
      { incident_id: '../x' },
      '/incident_id',
    ),
    invalid('from no incident', 'POST', `${reports}/from-incident`, {}, '/incident_id'),
    // --- subscribers
    req(
      'a forged cursor',
      'GET',
      `/api/status-pages/${P}/subscribers?cursor=corpus-not-a-cursor`,
      undefined,
      400,
      'INVALID_PARAMETER',
    ),
    req(
      'an unknown subscriber',
      'DELETE',
      `/api/status-pages/${P}/subscribers/${MISSING_SUBSCRIBER}`,
      undefined,
      404,
      'SUBSCRIBER_NOT_FOUND',
    ),
    req(
      'another page’s subscriber',
      'DELETE',
      `/api/status-pages/${P}/subscribers/${FOLLOW.subscribers.other.id}`,
      undefined,
      404,
      'SUBSCRIBER_NOT_FOUND',
    ),
    req(
      'a malformed id',
      'DELETE',
      `/api/status-pages/${P}/subscribers/sub_..%2F`,
      undefined,
      404,
      'SUBSCRIBER_NOT_FOUND',
    ),
    ...domainCases(),
  ];
}

function domainCases(): Case[] {
  const domains = `/api/status-pages/${P}/domains`;
  const host = (name: string, hostname: unknown): Case =>
    invalid(`domain, ${name}`, 'POST', domains, { hostname }, '/hostname');
  return [
    host('an IPv4 literal', '192.0.2.10'),
    host('an IPv6 literal', '[2001:db8::1]'),
    host('a decimal IP', '3221225994'),
    // Upper case, a trailing dot and surrounding spaces are normalised, not refused (docs/api.md, custom domains).
    host('a wildcard', '*.corpus-bad.example'),
    host('one label', 'corpusbad'),
    host('a port', 'status.corpus-bad.example:8443'),
    host('a URL', 'https://status.corpus-bad.example'),
    host('an underscore', 'sta_tus.corpus-bad.example'),
    host('a space', 'status .corpus-bad.example'),
    host('non-ASCII (not in punycode)', 'stätus.corpus-bad.example'),
    host('a label over 63 characters', `${'a'.repeat(64)}.corpus-bad.example`),
    host('over 253 characters', `${'a.'.repeat(127)}example`),
    host('a leading hyphen', '-status.corpus-bad.example'),
    host('a number', 42),
    invalid('domain, no hostname', 'POST', domains, {}, '/hostname'),
    req('domain, localhost', 'POST', domains, { hostname: 'localhost' }, 400, 'DOMAIN_NOT_ALLOWED'),
    req('domain, the operator’s host', 'POST', domains, { hostname: FOLLOW.operator }, 400, 'DOMAIN_NOT_ALLOWED'),
    req(
      'domain, under the operator’s host',
      'POST',
      domains,
      { hostname: `status.${FOLLOW.operator}` },
      400,
      'DOMAIN_NOT_ALLOWED',
    ),
    req(
      'verify an unknown domain',
      'POST',
      `${domains}/status.corpus-missing.example/verify`,
      undefined,
      404,
      'DOMAIN_NOT_FOUND',
    ),
    req(
      'verify a domain without its TXT record',
      'POST',
      `${domains}/${FOLLOW.domains.pending}/verify`,
      undefined,
      400,
      'DOMAIN_NOT_VERIFIED',
    ),
    req(
      'verify a domain another page has verified',
      'POST',
      `${domains}/${FOLLOW.domains.taken}/verify`,
      undefined,
      409,
      'DOMAIN_TAKEN',
    ),
    req(
      'verify another page’s domain',
      'POST',
      `/api/status-pages/${O}/domains/${FOLLOW.domains.pending}/verify`,
      undefined,
      404,
      'DOMAIN_NOT_FOUND',
    ),
    req(
      'delete an unknown domain',
      'DELETE',
      `${domains}/status.corpus-missing.example`,
      undefined,
      404,
      'DOMAIN_NOT_FOUND',
    ),
    req(
      'delete another page’s domain',
      'DELETE',
      `/api/status-pages/${O}/domains/${FOLLOW.domains.pending}`,
      undefined,
      404,
      'DOMAIN_NOT_FOUND',
    ),
  ];
}

/** The emails a subscription refuses (400 VALIDATION_FAILED at /email). */
const BAD_EMAILS: [string, unknown][] = [
  ['no @', 'corpus-bad.example.com'],
  ['two @', 'a@b@example.com'],
  ['a space inside', 'corpus bad@example.com'],
  ['a leading space', ' corpus-bad@example.com'],
  ['a trailing newline', 'corpus-bad@example.com\n'],
  ['a header injected', 'corpus-bad@example.com\r\nBcc: victim@example.com'],
  ['a NUL', 'corpus-bad\u0000@example.com'],
  ['a tab', 'corpus\tbad@example.com'],
  ['DEL', 'corpus-bad\u007f@example.com'],
  ['no domain dot', 'corpus-bad@localhost'],
  ['an empty local part', '@example.com'],
  ['a local part over 64 characters', `${'a'.repeat(65)}@example.com`],
  ['255 characters', `${'a'.repeat(60)}@${'b'.repeat(182)}.example.com`],
  ['a kilobyte', `${'a'.repeat(60)}@${'b'.repeat(1000)}.example.com`],
  ['a full-width @', 'corpus-bad＠example.com'],
  ['a right-to-left override', 'corpus-bad\u202e@example.com'],
  ['a zero-width space', 'corpus\u200b-bad@example.com'],
  ['a byte-order mark', '\ufeffcorpus-bad@example.com'],
  ['an ideographic space', 'corpus-bad\u3000@example.com'],
  ['a line separator', 'corpus-bad@example.com\u2028'],
  ['an array', ['corpus-bad@example.com']],
  ['a number', 42],
  ['null', null],
];

/**
 * Webhook URLs the egress policy denies, judged before anything is sent (400
 * TARGET_NOT_ALLOWED): every notation of loopback names the trap's port.
 */
const deniedWebhooks = (trapPort: number): [string, string][] => [
  ['the metadata address', 'http://169.254.169.254/latest/meta-data/'],
  ['the metadata address as a decimal', 'http://2852039166/latest/meta-data/'],
  ['the metadata address IPv6-mapped', 'http://[::ffff:169.254.169.254]/latest/meta-data/'],
  ['the metadata address IPv6-mapped in hex', 'http://[::ffff:a9fe:a9fe]/'],
  ['10/8', 'http://10.0.0.1/hook'],
  ['172.16/12', 'http://172.16.0.1/hook'],
  ['192.168/16', 'http://192.168.1.1/hook'],
  ['CGNAT', 'http://100.64.0.1/hook'],
  ['0.0.0.0', `http://0.0.0.0:${trapPort}/hook`],
  ['loopback, another port', `http://127.0.0.1:${trapPort}/hook`],
  ['loopback 127.0.0.2', `http://127.0.0.2:${trapPort}/hook`],
  ['loopback as a decimal', `http://2130706433:${trapPort}/hook`],
  ['loopback in hex', `http://0x7f000001:${trapPort}/hook`],
  ['loopback in octal', `http://0177.0.0.1:${trapPort}/hook`],
  ['loopback shortened', `http://127.1:${trapPort}/hook`],
  ['[::1]', `http://[::1]:${trapPort}/hook`],
  ['[::ffff:127.0.0.1]', `http://[::ffff:127.0.0.1]:${trapPort}/hook`],
  ['[0:0:0:0:0:ffff:7f00:1]', `http://[0:0:0:0:0:ffff:7f00:1]:${trapPort}/hook`],
  ['[::] (unspecified)', `http://[::]:${trapPort}/hook`],
  ['unique-local IPv6', 'http://[fd00::1]/hook'],
  ['link-local IPv6', 'http://[fe80::1]/hook'],
  ['user info before the metadata address', 'http://corpus@169.254.169.254/'],
  ['https to 10/8', 'https://10.1.2.3/hook'],
];

function publicCases(env: FollowEnv): Case[] {
  const subscribe = `/api/status/${P}/subscribers`;
  const sub = (name: string, b: unknown, status: number, code?: string, field?: string, headers = {}): Case =>
    req(`subscribe, ${name}`, 'POST', subscribe, b, status, code, { ...noKey, ...headers }, field);
  const receiver = `http://127.0.0.1:${env.receiverPort}`;
  const unverified = (name: string, path: string): Case =>
    sub(`a webhook that ${name}`, { webhook: `${receiver}${path}` }, 400, 'WEBHOOK_VERIFICATION_FAILED');
  const history = `/api/status/${P}/history`;
  const pub = (name: string, method: string, path: string, status: number, code?: string, headers = {}): Case =>
    req(name, method, path, undefined, status, code, { ...noKey, ...headers });
  const badge = `/status/${P}/badges/m1`;
  return [
    // --- emails
    ...BAD_EMAILS.map(([name, email]) => sub(`email ${name}`, { email }, 400, VF, '/email')),
    sub('an email and a webhook', { email: `${MARK}@example.com`, webhook: `${receiver}/echo` }, 400, VF, '/'),
    sub('neither', { monitor_ids: ['m1'] }, 400, VF, '/email'),
    sub('an unknown field', { email: `${MARK}@example.com`, digest: 'weekly' }, 400, VF, '/digest'),
    sub(
      'a monitor of the tenant not on the page',
      { email: `${MARK}@example.com`, monitor_ids: ['tenant-a-monitor'] },
      400,
      VF,
      '/monitor_ids/0',
    ),
    sub(
      'an unknown monitor, second',
      { email: `${MARK}@example.com`, monitor_ids: ['m1', MISSING] },
      400,
      VF,
      '/monitor_ids/1',
    ),
    sub(
      'another tenant’s monitor',
      { email: `${MARK}@example.com`, monitor_ids: [FOREIGN] },
      400,
      VF,
      '/monitor_ids/0',
    ),
    sub('a monitor twice', { email: `${MARK}@example.com`, monitor_ids: ['m1', 'm1'] }, 400, VF, '/monitor_ids'),
    sub('monitor_ids a string', { email: `${MARK}@example.com`, monitor_ids: 'm1' }, 400, VF, '/monitor_ids'),
    req(
      'subscribe, another page’s monitor',
      'POST',
      `/api/status/${O}/subscribers`,
      { email: `${MARK}@example.com`, monitor_ids: ['m1'] },
      400,
      VF,
      noKey,
      '/monitor_ids/0',
    ),
    req(
      'subscribe, no such page',
      'POST',
      '/api/status/corpus-missing-page/subscribers',
      { email: `${MARK}@example.com` },
      404,
      'STATUS_PAGE_NOT_FOUND',
      noKey,
    ),
    sub('not JSON', '{"email":', 400, 'INVALID_JSON'),
    sub('a form', `email=${MARK}%40example.com`, 415, 'UNSUPPORTED_MEDIA_TYPE', undefined, {
      'content-type': 'application/x-www-form-urlencoded',
    }),
    sub('a body of 1 MB', { email: `${MARK}@example.com`, pad: big(1_000_000) }, 413, 'PAYLOAD_TOO_LARGE'),
    // --- webhooks: the URL's form, then the egress policy, then the verification
    sub('a webhook of ftp', { webhook: 'ftp://corpus-bad.example/hook' }, 400, VF, '/webhook'),
    sub('a webhook of javascript', { webhook: 'javascript:alert(1)' }, 400, VF, '/webhook'),
    sub('a webhook without a host', { webhook: 'http://' }, 400, VF, '/webhook'),
    sub('a webhook over 2048 characters', { webhook: `https://corpus-bad.example/${big(2048)}` }, 400, VF, '/webhook'),
    ...deniedWebhooks(env.trapPort).map(([name, webhook]) =>
      sub(`a webhook at ${name}`, { webhook }, 400, 'TARGET_NOT_ALLOWED'),
    ),
    unverified('answers another text', '/wrong'),
    unverified('answers another challenge in JSON', '/json-wrong'),
    unverified('answers 500 with the challenge', '/error'),
    unverified('answers 204 with nothing', '/empty'),
    unverified('never answers in time', '/slow'),
    unverified('redirects to one that would answer', '/redirect'),
    // --- the history
    pub('no such page', 'GET', '/api/status/corpus-missing-page/history', 404, 'STATUS_PAGE_NOT_FOUND'),
    pub('limit 0', 'GET', `${history}?limit=0`, 400, 'INVALID_PARAMETER'),
    pub('limit over the maximum', 'GET', `${history}?limit=101`, 400, 'INVALID_PARAMETER'),
    pub('limit negative', 'GET', `${history}?limit=-1`, 400, 'INVALID_PARAMETER'),
    pub('limit a fraction', 'GET', `${history}?limit=1.5`, 400, 'INVALID_PARAMETER'),
    pub('limit twice', 'GET', `${history}?limit=1&limit=2`, 400, 'INVALID_PARAMETER'),
    pub('a forged cursor', 'GET', `${history}?cursor=corpus-not-a-cursor`, 400, 'INVALID_PARAMETER'),
    pub('a cursor of bytes', 'GET', `${history}?cursor=%00%ff`, 400, 'INVALID_PARAMETER'),
    pub('a cursor of a kilobyte', 'GET', `${history}?cursor=${'A'.repeat(1024)}`, 400, 'INVALID_PARAMETER'),
    pub('an unknown parameter', 'GET', `${history}?state=open`, 400, 'INVALID_PARAMETER'),
    // --- feeds and badges
    pub('no such page', 'GET', '/status/corpus-missing-page/feed.rss', 404, 'STATUS_PAGE_NOT_FOUND'),
    pub('no such page', 'GET', '/status/corpus-missing-page/feed.atom', 404, 'STATUS_PAGE_NOT_FOUND'),
    pub('a window of a year', 'GET', `${badge}/uptime.svg?window=1y`, 400, 'INVALID_PARAMETER'),
    pub('a window of upper case', 'GET', `${badge}/uptime.svg?window=24H`, 400, 'INVALID_PARAMETER'),
    pub('an empty window', 'GET', `${badge}/uptime.svg?window=`, 400, 'INVALID_PARAMETER'),
    pub('a window in hours', 'GET', `${badge}/uptime.svg?window=720`, 400, 'INVALID_PARAMETER'),
    pub('two windows', 'GET', `${badge}/uptime.svg?window=24h&window=7d`, 400, 'INVALID_PARAMETER'),
    pub('an unknown parameter', 'GET', `${badge}/status.svg?style=flat`, 400, 'INVALID_PARAMETER'),
    pub(
      'a monitor of the tenant not on the page',
      'GET',
      `/status/${P}/badges/tenant-a-monitor/status.svg`,
      404,
      'MONITOR_NOT_FOUND',
    ),
    pub('another tenant’s monitor', 'GET', `/status/${P}/badges/${FOREIGN}/uptime.svg`, 404, 'MONITOR_NOT_FOUND'),
    pub('an unknown monitor', 'GET', `/status/${P}/badges/${MISSING}/response-time.svg`, 404, 'MONITOR_NOT_FOUND'),
    pub('no such page', 'GET', '/status/corpus-missing-page/badges/m1/status.svg', 404, 'STATUS_PAGE_NOT_FOUND'),
    pub('an unknown badge', 'GET', `${badge}/latency.svg`, 404, 'NOT_FOUND'),
    // --- other hosts (the Host header)
    pub('an unknown host', 'GET', `/api/status/${P}`, 404, 'NOT_FOUND', { host: 'corpus-unknown.example' }),
    pub('an unknown host', 'GET', '/api/status-domain', 404, undefined, { host: 'corpus-unknown.example' }),
    pub('a pending domain', 'GET', `/api/status/${P}`, 404, 'NOT_FOUND', { host: FOLLOW.domains.pending }),
    pub('a verified domain, the API', 'GET', '/api/monitors', 404, 'NOT_FOUND', {
      host: FOLLOW.domains.verified,
      authorization: 'Bearer @monitors',
    }),
    pub('a verified domain, another page', 'GET', `/api/status/${O}`, 404, 'NOT_FOUND', {
      host: FOLLOW.domains.verified,
    }),
    pub('a verified domain, the console', 'GET', '/console/', 404, undefined, { host: FOLLOW.domains.verified }),
    pub('a verified domain, sessions', 'POST', '/api/session/password', 404, 'NOT_FOUND', {
      host: FOLLOW.domains.verified,
    }),
  ];
}

const links = (): SubscriptionLinks => new SubscriptionLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://127.0.0.1');
let genuineTokens: { confirm: string; unsubscribe: string } | undefined;
/**
 * Genuine tokens the corpus sends where they must not work (a query string, a GET): the
 * pending subscriber's confirmation, the active one's unsubscribe. Made once, so the runner
 * can check that no log line holds them.
 */
export function followTokens(): { confirm: string; unsubscribe: string } {
  genuineTokens ??= {
    confirm: links().token('confirm', FOLLOW.subscribers.pending.id, P, Date.now() + 86_400_000),
    unsubscribe: links().token('unsubscribe', FOLLOW.subscribers.active.id, P),
  };
  return genuineTokens;
}

/** Confirmation and unsubscribe tokens: forged, expired, of another page, purpose or key. */
function tokenCases(): Case[] {
  const L = links();
  const other = new SubscriptionLinks(parseSealingKeys(`corpus-other:${'B'.repeat(43)}=`), 'http://127.0.0.1');
  const S = FOLLOW.subscribers;
  const day = Date.now() + 86_400_000;
  const genuine = followTokens().confirm;
  const tokens: [string, string][] = [
    ['forged', `${genuine.slice(0, genuine.lastIndexOf('.'))}.${'A'.repeat(22)}`],
    ['expired', L.token('confirm', S.pending.id, P, Date.now() - 60_000)],
    ['of another page', L.token('confirm', S.pending.id, O, day)],
    ['of another page’s subscriber', L.token('confirm', S.other.id, P, day)],
    ['an unsubscribe token', L.token('unsubscribe', S.pending.id, P)],
    ['signed by another key', other.token('confirm', S.pending.id, P, day)],
    ['for nobody', L.token('confirm', MISSING_SUBSCRIBER, P, day)],
    ['used (the subscriber is active)', L.token('confirm', S.active.id, P, day)],
    ['an expiry pushed later', genuine.replace(/\.(\d+)\./, (_m, e: string) => `.${Number(e) + 86_400}.`)],
    ['another subscriber’s signature', `${S.active.id}${genuine.slice(genuine.indexOf('.'))}`],
    ['garbage', 'corpus-not-a-token'],
  ];
  const confirm = `/api/status/${P}/subscribers/confirm`;
  const unsubscribe = `/api/status/${P}/unsubscribe`;
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const unsubscribeTokens: [string, string][] = [
    ['forged', `${S.active.id}.0.${'A'.repeat(22)}`],
    ['of another page', L.token('unsubscribe', S.active.id, O)],
    ['a confirmation token', L.token('confirm', S.active.id, P, day)],
    ['signed by another key', other.token('unsubscribe', S.active.id, P)],
    ['with an expiry', L.token('unsubscribe', S.active.id, P, day).replace(/\.0\./, `.${Math.floor(day / 1000)}.`)],
    ['garbage', 'corpus-not-a-token'],
  ];
  return [
    ...tokens.map(([name, token]) =>
      req(`confirm, a token ${name}`, 'POST', confirm, { token }, 400, 'SUBSCRIPTION_LINK_INVALID', noKey),
    ),
    invalid('confirm, no token', 'POST', confirm, {}, '/token', noKey),
    invalid('confirm, a token with a space', 'POST', confirm, { token: 'a b' }, '/token', noKey),
    invalid('confirm, a token of a kilobyte', 'POST', confirm, { token: 'A'.repeat(1024) }, '/token', noKey),
    invalid('confirm, a token a number', 'POST', confirm, { token: 1 }, '/token', noKey),
    req(
      'confirm, with a query token only',
      'POST',
      `${confirm}?token=${genuine}`,
      undefined,
      400,
      'INVALID_PARAMETER',
      noKey,
    ),
    req(
      'confirm, by GET (mail scanners change nothing)',
      'GET',
      `${confirm}?token=${genuine}`,
      undefined,
      405,
      'METHOD_NOT_ALLOWED',
      noKey,
    ),
    ...unsubscribeTokens.flatMap(([name, token]) => [
      req(
        `unsubscribe, a token ${name} (JSON)`,
        'POST',
        unsubscribe,
        { token },
        400,
        'SUBSCRIPTION_LINK_INVALID',
        noKey,
      ),
      req(
        `unsubscribe, a token ${name} (one click)`,
        'POST',
        `${unsubscribe}?token=${encodeURIComponent(token)}`,
        'List-Unsubscribe=One-Click',
        400,
        'SUBSCRIPTION_LINK_INVALID',
        { ...noKey, ...form },
      ),
    ]),
    req(
      'unsubscribe, of another page’s subscriber (one click)',
      'POST',
      `/api/status/${O}/unsubscribe?token=${L.token('unsubscribe', S.active.id, P)}`,
      'List-Unsubscribe=One-Click',
      400,
      'SUBSCRIPTION_LINK_INVALID',
      { ...noKey, ...form },
    ),
    req(
      'unsubscribe, by GET (mail scanners change nothing)',
      'GET',
      `${unsubscribe}?token=${followTokens().unsubscribe}`,
      undefined,
      405,
      'METHOD_NOT_ALLOWED',
      noKey,
    ),
  ];
}

/** A maintenance window's message (shown on pages and in notices): text, as a report's. */
function maintenanceCases(): Case[] {
  const window = (message: unknown): object => ({
    maintenance_windows: [{ from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', message }],
  });
  const expect = { status: 400, code: VF, path: '/maintenance_windows/0/message' };
  const bad = (name: string, message: unknown): Case[] => [
    { ...invalidCreate(`maintenance message ${name}`, window(message)), expect },
    { ...invalidChange(`maintenance message ${name}`, window(message)), expect },
  ];
  return [
    ...bad('over 500 characters', big(501)),
    ...bad('empty', ''),
    ...bad('of spaces', '   '),
    ...bad('with a NUL', 'back\u0000soon'),
    ...bad('with an escape character', 'back \u001b[31msoon'),
    ...bad('a number', 5),
  ];
}

type Operation = { responses: Record<string, { content?: Record<string, { schema?: { allOf?: Json[] } }> }> };
type Json = { properties?: { code?: { enum?: string[] } } };
let documented: { re: RegExp; holes: number; ops: Record<string, Operation> }[] | undefined;
/**
 * The error codes the OpenAPI document lists for `method` on a concrete `path` (the most
 * specific template that matches: `/reports/from-incident` before `/reports/{id}`).
 */
export function documentedCodes(method: string, path: string): Set<string> | undefined {
  documented ??= Object.entries(buildOpenApi('query').paths as Record<string, Record<string, Operation>>).map(
    ([template, ops]) => ({
      re: new RegExp(`^${template.replace(/\./g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
      holes: (template.match(/\{/g) ?? []).length,
      ops,
    }),
  );
  const best = documented.filter((d) => d.re.test(path)).sort((a, b) => a.holes - b.holes)[0];
  const op = best?.ops[method.toLowerCase()];
  if (!op) return undefined;
  const codes = Object.values(op.responses).flatMap(
    (r) => r.content?.['application/json']?.schema?.allOf?.[1]?.properties?.code?.enum ?? [],
  );
  return new Set(codes);
}

/** Every status-follow case (built on call: some bodies are a megabyte). */
export const statusFollowCases = (env: FollowEnv): Case[] => [
  ...ownerCases(),
  ...publicCases(env),
  ...tokenCases(),
  ...maintenanceCases(),
];
