/** Bad-input cases: GET /api/monitors/{id}/checks (and summary, export): keys, scopes, another tenant's monitor, injection in the path and every parameter. */
import { type Case, list, pathPart, FOREIGN } from './case.js';

export const checkCases = (): Case[] => [
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
  list('revoked-kind key', '/api/monitors/m1/checks', { authorization: 'Bearer @revoked' }, 401, 'INVALID_CREDENTIALS'),
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
];
