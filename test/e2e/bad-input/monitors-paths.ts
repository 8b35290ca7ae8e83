/** Bad-input cases: the monitor registry: ids in the path, unknown monitors, wrong methods. */
import { type Case, list, good, mon, pathPart, MISSING } from './case.js';

/** The routes of one monitor, each with the body it takes: every one refuses a bad or unknown id. */
const ONE_MONITOR: readonly [method: string, route: string, body: object | undefined][] = [
  ['GET', '', undefined],
  ['PATCH', '', { paused: false }],
  ['DELETE', '', undefined],
  ['GET', '/incidents', undefined],
  ['GET', '/webhook-deliveries', undefined],
];

export const monitorPathCases = (): Case[] => [
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
  ].flatMap((id) =>
    ONE_MONITOR.map(([method, route, b]) =>
      mon(
        `id ${decodeURIComponent(id).slice(0, 30)}`,
        method,
        `/api/monitors/${pathPart(id)}${route}`,
        b,
        400,
        'INVALID_PARAMETER',
      ),
    ),
  ),
  // --- monitor registry: unknown monitors
  ...ONE_MONITOR.map(([method, route, b]) =>
    mon('unknown monitor', method, `/api/monitors/${MISSING}${route}`, b, 404, 'MONITOR_NOT_FOUND'),
  ),
  mon(
    'unknown monitor, status=open',
    'GET',
    `/api/monitors/${MISSING}/incidents?status=open`,
    undefined,
    404,
    'MONITOR_NOT_FOUND',
  ),
  list('unknown monitor', `/api/monitors/${MISSING}/checks`, {}, 404, 'MONITOR_NOT_FOUND'),
  list('unknown monitor', `/api/monitors/${MISSING}/checks/summary`, {}, 404, 'MONITOR_NOT_FOUND'),
  list('unknown monitor', `/api/monitors/${MISSING}/checks/export`, {}, 404, 'MONITOR_NOT_FOUND'),
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
