/**
 * Bad-input cases: the monitor settings of issue 45 (docs/assertions.md, docs/api-flows.md,
 * docs/browser-checks.md, docs/monitors.md "icmp"): invalid expressions, paths and
 * selectors, too many steps, a variable never set, a pattern the engine refuses, unknown
 * browser actions, targets at denied addresses. Each is refused at creation with its
 * documented code and, for VALIDATION_FAILED, the field's path.
 */
import { type Case, create, good, MARK, mon, FOREIGN } from './case.js';

const at = (name: string, over: object, path: string): Case => ({
  ...create(name, good(over), 400, 'VALIDATION_FAILED'),
  expect: { status: 400, code: 'VALIDATION_FAILED', path },
});
const assertion = (name: string, text: string): Case =>
  at(`assertion ${name}`, { assertions: [text] }, '/assertions/0');

const base = `https://${MARK}.example`;
const flow = (steps: unknown[], over: object = {}): object => ({
  type: 'api_flow',
  url: base,
  api_steps: steps,
  ...over,
});
const browse = (steps: unknown[], over: object = {}): object => ({
  type: 'browser',
  url: base,
  browser_steps: steps,
  ...over,
});
const step = (over: object = {}): object => ({ url: '/login', ...over });

export const monitorCheckCases = (): Case[] => [
  // --- assertions (http, tls, dns)
  assertion('with = for ==', 'status = 200'),
  assertion('without a value', 'status =='),
  assertion('without an operator', 'status 200'),
  assertion('of an unknown subject', 'colour == "red"'),
  assertion('of a JSON path with ..', '$..token == "x"'),
  assertion('of a JSON path with an open bracket', '$.items[0 == 1'),
  assertion('comparing a number with a string', 'status < "abc"'),
  assertion('with an unquoted string', '$.status == ok'),
  assertion('of another type (tls on http)', 'tls.days_left > 14'),
  assertion('matching a backreference', 'body matches "(a)\\\\1"'),
  assertion('matching a lookahead', 'body matches "a(?=b)"'),
  assertion('matching an invalid pattern', 'body matches "(["'),
  at('21 assertions', { assertions: Array.from({ length: 21 }, () => 'status == 200') }, '/assertions'),
  at('an assertion of 501 characters', { assertions: [`body contains "${'a'.repeat(485)}"`] }, '/assertions/0'),
  at(
    'assertions on a tcp monitor',
    { type: 'tcp', url: `tcp://${MARK}.example:5432`, assertions: ['status == 200'] },
    '/assertions',
  ),
  // --- api_flow
  at('an api flow without steps', flow([]), '/api_steps'),
  at('an api flow of 11 steps', flow(Array.from({ length: 11 }, () => step())), '/api_steps'),
  at(
    'an api flow using a variable never set',
    flow([step({ headers: { Authorization: 'Bearer {{token}}' } })]),
    '/api_steps/0/headers/Authorization',
  ),
  at(
    'an api flow using a variable a later step extracts',
    flow([step({ url: '/me?t={{token}}' }), step({ extract: { token: '$.token' } })]),
    '/api_steps/0/url',
  ),
  at(
    'an api flow with a variable in the host',
    flow([step({ url: 'https://{{host}}/x' })], { variables: { host: 'a' } }),
    '/api_steps/0/url',
  ),
  at(
    'an api flow step URL whose backslash the URL parser reads as another host',
    flow([step({ url: '/\\evil.example/x' })]),
    '/api_steps/0/url',
  ),
  at(
    'an api flow step URL letting a variable choose the host through a backslash',
    flow([step({ url: '/\\{{host}}/x' })], { variables: { host: 'evil.example' } }),
    '/api_steps/0/url',
  ),
  at(
    'an api flow step URL written relative that resolves to another origin',
    flow([step({ url: 'http:evil.example/x' })]),
    '/api_steps/0/url',
  ),
  at(
    'a browser goto with a tab between its slashes',
    browse([{ action: 'goto', url: '/\t/evil.example' }]),
    '/browser_steps/0/url',
  ),
  at(
    'an api flow extracting a bad path',
    flow([step({ extract: { token: '$..token' } })]),
    '/api_steps/0/extract/token',
  ),
  at(
    'an api flow extracting into a bad name',
    flow([step({ extract: { '1token': '$.token' } })]),
    '/api_steps/0/extract',
  ),
  at('an api flow with a bad step assertion', flow([step({ assertions: ['status ='] })]), '/api_steps/0/assertions/0'),
  at('an api flow GET step with a body', flow([step({ method: 'GET', body: 'x' })]), '/api_steps/0/body'),
  at('an api flow step of another scheme', flow([step({ url: 'ftp://x.example/' })]), '/api_steps/0/url'),
  at('variables with a bad name', flow([step()], { variables: { 'a-b': 'x' } }), '/variables'),
  at('variables on an http monitor', { variables: { a: 'x' } }, '/variables'),
  create(
    'an api flow step at a denied address',
    good(flow([step({ url: 'http://169.254.169.254/latest/meta-data/' })], { paused: true })),
    400,
    'TARGET_NOT_ALLOWED',
  ),
  // --- browser
  at('a browser monitor without steps', browse([]), '/browser_steps'),
  at('an unknown browser action', browse([{ action: 'evaluate', value: 'alert(1)' }]), '/browser_steps/0/action'),
  at('a click without a selector', browse([{ action: 'click' }]), '/browser_steps/0/selector'),
  at('a fill without a value', browse([{ action: 'fill', selector: '#user' }]), '/browser_steps/0/value'),
  at('a goto with a selector', browse([{ action: 'goto', url: '/x', selector: '#a' }]), '/browser_steps/0/selector'),
  at('an invalid selector', browse([{ action: 'click', selector: 'div[' }]), '/browser_steps/0/selector'),
  at(
    'a fill using a variable never set',
    browse([{ action: 'fill', selector: '#p', value: '{{password}}' }]),
    '/browser_steps/0/value',
  ),
  at(
    '31 browser steps',
    browse(Array.from({ length: 31 }, () => ({ action: 'click', selector: '#a' }))),
    '/browser_steps',
  ),
  create(
    'a browser goto at a denied address',
    good(browse([{ action: 'goto', url: 'http://10.0.0.1/admin' }], { paused: true })),
    400,
    'TARGET_NOT_ALLOWED',
  ),
  // --- icmp
  at('an icmp URL with a port', { type: 'icmp', url: `icmp://${MARK}.example:80` }, '/url'),
  at('an icmp URL with a path', { type: 'icmp', url: `icmp://${MARK}.example/x` }, '/url'),
  at('icmp_count 0', { type: 'icmp', url: `icmp://${MARK}.example`, icmp_count: 0 }, '/icmp_count'),
  at('icmp_count 21', { type: 'icmp', url: `icmp://${MARK}.example`, icmp_count: 21 }, '/icmp_count'),
  at('icmp_count on an http monitor', { icmp_count: 3 }, '/icmp_count'),
  ...['icmp://10.0.0.1', 'icmp://169.254.169.254', 'icmp://[fd00::1]', 'icmp://0.0.0.0'].map((url) =>
    create(`an icmp monitor of ${url}`, good({ type: 'icmp', url, paused: true }), 400, 'TARGET_NOT_ALLOWED'),
  ),
  // --- run once now: validated as a new monitor (or a PATCH of the caller's own), never stored
  run('an empty body', {}, 400, 'VALIDATION_FAILED'),
  run('settings of the wrong type', { settings: [good()] }, 400, 'VALIDATION_FAILED'),
  {
    ...run('an invalid assertion', { settings: good({ assertions: ['status ='] }) }, 400, 'VALIDATION_FAILED'),
    expect: { status: 400, code: 'VALIDATION_FAILED', path: '/assertions/0' },
  },
  run(
    'a denied target',
    { settings: good({ url: 'http://169.254.169.254/latest/meta-data/' }) },
    400,
    'TARGET_NOT_ALLOWED',
  ),
  run("another tenant's monitor", { settings: { name: `${MARK} x` }, monitor_id: FOREIGN }, 404, 'MONITOR_NOT_FOUND'),
  run('a heartbeat monitor', { settings: { name: `${MARK} x`, type: 'heartbeat' } }, 400, 'VALIDATION_FAILED'),
];

function run(name: string, b: unknown, status: number, code: string): Case {
  return mon(name, 'POST', '/api/monitors/run-once', b, status, code);
}
