/** Bad-input cases: the gateway: wrong routes and methods. */
import { type Case } from './case.js';

export const gatewayRouteCases = (): Case[] => [
  // --- wrong routes and methods
  {
    name: 'GET events (POST only)',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/events',
    expect: { status: 405, code: 'METHOD_NOT_ALLOWED' },
  },
  {
    name: 'PUT events',
    service: 'gateway',
    method: 'PUT',
    path: '/api/telemetry/events',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    expect: { status: 405, code: 'METHOD_NOT_ALLOWED' },
  },
  {
    name: 'path traversal on the gateway',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/../../etc/passwd',
    expect: { status: 404, code: 'NOT_FOUND' },
  },
];
