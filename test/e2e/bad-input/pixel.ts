/** Bad-input cases: GET /api/telemetry/pixel.gif: keys and parameters in the query string. */
import { type Case } from './case.js';

export const pixelCases = (): Case[] => [
  // --- pixel
  {
    name: 'GET pixel: no key',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?source=s&category=c',
    expect: { status: 401, code: 'MISSING_CREDENTIALS' },
  },
  {
    name: 'GET pixel: revoked key',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@revoked&source=s&category=c',
    expect: { status: 401, code: 'INVALID_CREDENTIALS' },
  },
  {
    name: 'GET pixel: payload not JSON',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&payload=%7Bnope',
    expect: { status: 400, code: 'INVALID_JSON' },
  },
  {
    name: 'GET pixel: payload an array',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&payload=%5B%5D',
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: source twice',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=a&source=b&category=c',
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: unknown parameter',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&admin=1',
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: __proto__ parameter',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&__proto__=1',
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: SQL in source',
    service: 'gateway',
    method: 'GET',
    path: `/api/telemetry/pixel.gif?key=@access&category=c&source=${encodeURIComponent("' OR 1=1 --")}`,
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: anonymous_id 257 chars',
    service: 'gateway',
    method: 'GET',
    path: `/api/telemetry/pixel.gif?key=@access&source=s&category=c&anonymous_id=${'a'.repeat(257)}`,
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: user_id with a control character',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&user_id=a%0D%0AX-Injected:%201',
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
  {
    name: 'GET pixel: user_id twice',
    service: 'gateway',
    method: 'GET',
    path: '/api/telemetry/pixel.gif?key=@access&source=s&category=c&user_id=a&user_id=b',
    expect: { status: 400, code: 'VALIDATION_FAILED' },
  },
];
