/**
 * Bad-input cases: the configuration API (docs/as-code.md, "The API"): GET and POST
 * /api/config, POST /api/config/adopt. Every one is refused before anything is written
 * (the runner checks that no monitor changed); none is a valid document applied.
 */
import { CONFIG_LIMITS } from '@telemetry/contract';
import { type Case, MARK, mon } from './case.js';

const apply = (name: string, b: unknown, status = 400, code = 'VALIDATION_FAILED', query = '?dry_run=true'): Case =>
  mon(name, 'POST', `/api/config${query}`, b, status, code);
const item = (over: object = {}): Record<string, unknown> => ({ key: 'corpus-bad', name: `${MARK} monitor`, ...over });
const nested = (depth: number): unknown => (depth === 0 ? 'x' : { a: nested(depth - 1) });

export const configCases = (): Case[] => [
  // --- the body
  apply('empty body', '', 400, 'INVALID_JSON'),
  apply('not JSON', '{"version": 1,', 400, 'INVALID_JSON'),
  mon('YAML', 'POST', '/api/config', 'version: 1', 415, 'UNSUPPORTED_MEDIA_TYPE', {
    'content-type': 'application/yaml',
  }),
  apply('null', 'null'),
  apply('a list', [{ version: 1 }]),
  apply('no version', { monitors: [] }),
  apply('version 2', { version: 2 }),
  apply('version as a string', { version: '1' }),
  apply('an unknown section', { version: 1, checks: [] }),
  apply('a section not a list', { version: 1, monitors: { key: 'x' } }),
  apply('an item not an object', { version: 1, monitors: ['corpus-bad'] }),
  apply('an item without a key', { version: 1, monitors: [{ name: `${MARK} monitor` }] }),
  apply('a key in upper case', { version: 1, monitors: [item({ key: 'Corpus' })] }),
  apply('a key starting with a dash', { version: 1, monitors: [item({ key: '-corpus' })] }),
  apply('a key with a slash', { version: 1, monitors: [item({ key: 'a/b' })] }),
  apply('a key of 64 characters', { version: 1, monitors: [item({ key: 'k'.repeat(64) })] }),
  apply('a key not a string', { version: 1, channels: [item({ key: 7 })] }),
  apply('a key given twice', { version: 1, monitors: [item(), item()] }),
  apply('more objects than allowed', {
    version: 1,
    monitors: Array.from({ length: CONFIG_LIMITS.maxObjects + 1 }, (_, i) => item({ key: `k${i}` })),
  }),
  apply('nested too deep', { version: 1, monitors: [item({ body: nested(10) })] }),
  apply('a SecretPin of no stored value', {
    version: 1,
    monitors: [item({ headers: { Authorization: { fingerprint: 'fp1.k1.AAAAAAAAAAAAAAAAAAAAAA' } } })],
  }),
  apply('a body over 4 MiB', { version: 1, pad: 'x'.repeat(CONFIG_LIMITS.maxBodyBytes) }, 413, 'PAYLOAD_TOO_LARGE'),
  // --- parameters
  apply('dry_run=yes', { version: 1 }, 400, 'INVALID_PARAMETER', '?dry_run=yes'),
  apply('dry_run=1', { version: 1 }, 400, 'INVALID_PARAMETER', '?dry_run=1'),
  apply('prune=TRUE', { version: 1 }, 400, 'INVALID_PARAMETER', '?prune=TRUE'),
  apply('prune empty', { version: 1 }, 400, 'INVALID_PARAMETER', '?dry_run=true&prune='),
  apply('dry_run twice', { version: 1 }, 400, 'INVALID_PARAMETER', '?dry_run=true&dry_run=false'),
  apply('an unknown parameter', { version: 1 }, 400, 'INVALID_PARAMETER', '?dry_run=true&force=true'),
  mon('a parameter', 'GET', '/api/config?format=yaml', undefined, 400, 'INVALID_PARAMETER'),
  mon('a parameter', 'POST', '/api/config/adopt?dry_run=true', undefined, 400, 'INVALID_PARAMETER'),
  // --- keys
  mon('no key', 'POST', '/api/config?dry_run=true', { version: 1 }, 401, 'MISSING_CREDENTIALS', { authorization: '' }),
  mon('a read-only key', 'POST', '/api/config?dry_run=true', { version: 1 }, 403, 'INSUFFICIENT_SCOPE', {
    authorization: 'Bearer @viewer',
  }),
  mon(
    'a key limited to some monitors',
    'POST',
    '/api/config?dry_run=true',
    { version: 1 },
    403,
    'MONITOR_NOT_ALLOWED',
    {
      authorization: 'Bearer @restricted',
    },
  ),
  mon('a key without monitors:read', 'GET', '/api/config', undefined, 403, 'INSUFFICIENT_SCOPE', {
    authorization: 'Bearer @api',
  }),
  mon('a read-only key', 'POST', '/api/config/adopt', undefined, 403, 'INSUFFICIENT_SCOPE', {
    authorization: 'Bearer @viewer',
  }),
  mon('a key limited to some monitors', 'POST', '/api/config/adopt', undefined, 403, 'MONITOR_NOT_ALLOWED', {
    authorization: 'Bearer @restricted',
  }),
];
