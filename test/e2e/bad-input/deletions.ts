/**
 * Bad-input cases: /api/deletions (docs/deletions.md, "The API") and the `bots` parameter
 * of GET /api/events/per-minute (docs/enrichment.md). None of the POSTs may record a
 * deletion (nor suppress an id): each is refused before PostgreSQL is written.
 * `@foreignDeletionId` is a deletion of another tenant the runner records (pending).
 */
import { queryRequest, type Case, FOREIGN_TENANT } from './case.js';

const MISSING = 'del_00000000000000000000';

const req = queryRequest(/del_[a-z0-9]+|@foreignDeletionId/);
const ask = (name: string, b: unknown, status = 400, code = 'VALIDATION_FAILED'): Case =>
  req(name, 'POST', '/api/deletions', b, status, code);
const ids = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

export const deletionCases = (): Case[] => [
  // --- the request body
  req('empty body', 'POST', '/api/deletions', '', 400, 'INVALID_JSON'),
  req('not JSON', 'POST', '/api/deletions', '{"user_ids":', 400, 'INVALID_JSON'),
  ask('no ids at all', {}),
  ask('an empty list', { user_ids: [] }),
  ask('both lists empty', { user_ids: [], anonymous_ids: [] }),
  ask('ids not a list', { user_ids: 'alice' }),
  ask('an id not a string', { anonymous_ids: [42] }),
  ask('an id null', { user_ids: [null] }),
  ask('a body that is a list', [{ user_ids: ['alice'] }]),
  ask('an empty id', { user_ids: [''] }),
  ask('an id with a NUL', { user_ids: ['alice\u0000'] }),
  ask('an id with a newline', { anonymous_ids: ['a\nb'] }),
  ask('an id with an escape sequence', { user_ids: ['\u001b[31malice'] }),
  ask('an id longer than 256 characters', { user_ids: ['a'.repeat(257)] }),
  ask('the same id twice', { user_ids: ['alice', 'alice'] }),
  ask('naming a tenant', { tenant_id: FOREIGN_TENANT, user_ids: ['alice'] }),
  ask('an unknown field', { user_ids: ['alice'], emails: ['a@b.example'] }),
  ask('1001 ids in one list', { user_ids: ids(1001, 'u') }),
  ask('1001 ids in all (600 + 401)', { user_ids: ids(600, 'u'), anonymous_ids: ids(401, 'a') }, 413, 'TOO_MANY_IDS'),
  req(
    'a query parameter',
    'POST',
    '/api/deletions?tenant=ten_default',
    { user_ids: ['alice'] },
    400,
    'INVALID_PARAMETER',
  ),
  req(
    'a key without deletions:write',
    'POST',
    '/api/deletions',
    { user_ids: ['alice'] },
    403,
    'INSUFFICIENT_SCOPE',
    '@viewer',
  ),
  req('no key', 'POST', '/api/deletions', { user_ids: ['alice'] }, 401, 'MISSING_CREDENTIALS', ''),
  // --- reading
  req("another tenant's deletion", 'GET', '/api/deletions/@foreignDeletionId', undefined, 404, 'DELETION_NOT_FOUND'),
  req('a missing deletion', 'GET', `/api/deletions/${MISSING}`, undefined, 404, 'DELETION_NOT_FOUND'),
  req('a malformed id', 'GET', '/api/deletions/..%2f..%2fetc', undefined, 400, 'INVALID_PARAMETER'),
  req('an id with upper case', 'GET', '/api/deletions/del_0000000000000000000A', undefined, 400, 'INVALID_PARAMETER'),
  req('a key without deletions:read', 'GET', '/api/deletions', undefined, 403, 'INSUFFICIENT_SCOPE', '@api'),
  req('limit 0', 'GET', '/api/deletions?limit=0', undefined, 400, 'INVALID_PARAMETER'),
  req('limit 101', 'GET', '/api/deletions?limit=101', undefined, 400, 'INVALID_PARAMETER'),
  req('a cursor it did not issue', 'GET', '/api/deletions?cursor=bm9wZQ', undefined, 400, 'INVALID_PARAMETER'),
  req('an unknown parameter', 'GET', '/api/deletions?tenant_id=ten_default', undefined, 400, 'INVALID_PARAMETER'),
  req('PUT', 'PUT', '/api/deletions', { user_ids: ['alice'] }, 405, 'METHOD_NOT_ALLOWED'),
  req('DELETE a deletion', 'DELETE', '/api/deletions/@foreignDeletionId', undefined, 405, 'METHOD_NOT_ALLOWED'),
  // --- GET /api/events/per-minute?bots= (include, exclude, only)
  req('bots not a filter', 'GET', '/api/events/per-minute?bots=humans', undefined, 400, 'INVALID_PARAMETER'),
  req('bots empty', 'GET', '/api/events/per-minute?bots=', undefined, 400, 'INVALID_PARAMETER'),
  req('bots upper case', 'GET', '/api/events/per-minute?bots=EXCLUDE', undefined, 400, 'INVALID_PARAMETER'),
  req('bots twice', 'GET', '/api/events/per-minute?bots=include&bots=only', undefined, 400, 'INVALID_PARAMETER'),
  req('bots as a number', 'GET', '/api/events/per-minute?bots=1', undefined, 400, 'INVALID_PARAMETER'),
];
