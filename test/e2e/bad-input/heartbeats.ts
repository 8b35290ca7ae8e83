/** Bad-input cases: POST /api/heartbeats/{token}: the token is the credential. */
import { type Case } from './case.js';

export const heartbeatCases = (): Case[] => [
  // --- heartbeats (the token is the credential)
  {
    name: 'heartbeat: malformed token',
    service: 'gateway',
    method: 'POST',
    path: '/api/heartbeats/hb_x',
    expect: { status: 404, code: 'HEARTBEAT_NOT_FOUND' },
  },
  {
    name: 'heartbeat: forged MAC',
    service: 'gateway',
    method: 'POST',
    path: `/api/heartbeats/hb_default_0123456789abcdef_${'0'.repeat(32)}`,
    expect: { status: 404, code: 'HEARTBEAT_NOT_FOUND' },
  },
  {
    name: 'heartbeat: token of 2000 chars',
    service: 'gateway',
    method: 'POST',
    path: `/api/heartbeats/${'a'.repeat(2000)}`,
    expect: { status: 404, code: 'HEARTBEAT_NOT_FOUND' },
  },
  {
    name: 'heartbeat: token with NUL',
    service: 'gateway',
    method: 'POST',
    path: '/api/heartbeats/hb_default%00',
    expect: { status: 404, code: 'HEARTBEAT_NOT_FOUND' },
  },
  {
    name: 'heartbeat: token with a slash',
    service: 'gateway',
    method: 'POST',
    path: '/api/heartbeats/hb_a%2Fb',
    expect: { status: 404, code: 'HEARTBEAT_NOT_FOUND' },
  },
  {
    name: 'heartbeat: GET',
    service: 'gateway',
    method: 'GET',
    path: '/api/heartbeats/hb_x',
    expect: { status: 405, code: 'METHOD_NOT_ALLOWED' },
  },
];
