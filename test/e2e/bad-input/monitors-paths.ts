/** Bad-input cases: The monitor registry: ids in the path, unknown monitors, wrong methods. */
import { type Case, list, good, mon, pathPart, MISSING } from './case.js';

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
  mon('unknown monitor', 'GET', `/api/monitors/${MISSING}`, undefined, 404, 'MONITOR_NOT_FOUND'),
  mon('unknown monitor', 'PATCH', `/api/monitors/${MISSING}`, { paused: false }, 404, 'MONITOR_NOT_FOUND'),
  mon('unknown monitor', 'DELETE', `/api/monitors/${MISSING}`, undefined, 404, 'MONITOR_NOT_FOUND'),
  mon('unknown monitor', 'GET', `/api/monitors/${MISSING}/incidents`, undefined, 404, 'MONITOR_NOT_FOUND'),
  mon('unknown monitor', 'GET', `/api/monitors/${MISSING}/webhook-deliveries`, undefined, 404, 'MONITOR_NOT_FOUND'),
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
