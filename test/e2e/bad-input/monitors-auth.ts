/** Bad-input cases: the monitor registry (/api/monitors): keys, scopes and preconditions. */
import { type Case, good, mon, create, change, FOREIGN } from './case.js';

export const monitorAuthCases = (): Case[] => [
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
];
