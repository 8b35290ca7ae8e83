/**
 * Bad-input cases: /api/event-schemas (docs/event-schemas.md, "Limits and refusals"):
 * schemas that are not JSON Schema, too large, too deep, remote or unbounded; bodies,
 * ids, parameters and scopes. None of them may create a schema.
 */
import { queryRequest, type Case, MARK } from './case.js';

const MISSING = 'sch_00000000000000000000';

const req = queryRequest(/sch_[a-z0-9]+/);
const create = (name: string, schema: unknown, status = 400, code = 'INVALID_SCHEMA', over: object = {}): Case =>
  req(
    name,
    'POST',
    '/api/event-schemas',
    { source: MARK, category: 'c', action: 'reject', schema, ...over },
    status,
    code,
  );

const nested = (levels: number): object => {
  let s: object = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { type: 'object', properties: { a: s } };
  return s;
};

export const eventSchemaCases = (): Case[] => [
  // --- the schema itself
  create('not JSON Schema (a bad type)', { type: 'objekt' }),
  create('an unknown keyword (strict mode)', { type: 'object', colour: 'red' }),
  create('required names an undeclared property (strict mode)', { type: 'object', required: ['a'] }),
  create('an unknown format', { type: 'string', format: 'credit-card' }),
  create('another draft', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }),
  create('larger than 32 KiB', { type: 'object', description: 'x'.repeat(33 * 1024) }),
  create('nested deeper than 32', nested(17)),
  create('a remote $ref', { $ref: 'https://schemas.example/order.json' }),
  create('a relative $ref to another document', { type: 'object', properties: { a: { $ref: 'other.json' } } }),
  create('a $ref to nothing', { $ref: '#/$defs/missing' }),
  create('a backreference pattern', { type: 'string', pattern: '^(a+)\\1$' }),
  create('a lookahead pattern', { type: 'string', pattern: '^(?=a)a+$' }),
  create('a backreference in patternProperties', { type: 'object', patternProperties: { '(x)\\1': {} } }),
  create('format regex', { type: 'string', format: 'regex' }),
  create('a $ref chain that doubles 20 times', {
    type: 'object',
    $defs: Object.fromEntries<object>([
      ['d20', { type: 'string' }],
      ...Array.from({ length: 20 }, (_, i): [string, object] => [
        `d${i}`,
        { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] },
      ]),
    ]),
    properties: { a: { $ref: '#/$defs/d0' } },
  }),
  create('a recursive $ref', {
    $defs: { t: { type: 'object', properties: { c: { $ref: '#/$defs/t' } } } },
    $ref: '#/$defs/t',
  }),
  create('uniqueItems without maxItems', { type: 'object', properties: { a: { type: 'array', uniqueItems: true } } }),
  // --- the body
  create('a string as the schema', 'string', 400, 'VALIDATION_FAILED'),
  create('an array as the schema', [{ type: 'object' }], 400, 'VALIDATION_FAILED'),
  create('an action not reject or route', { type: 'object' }, 400, 'VALIDATION_FAILED', { action: 'drop' }),
  create('a source with a space', { type: 'object' }, 400, 'VALIDATION_FAILED', { source: 'a b' }),
  create('a category of 101 characters', { type: 'object' }, 400, 'VALIDATION_FAILED', { category: 'c'.repeat(101) }),
  create('an unknown field', { type: 'object' }, 400, 'VALIDATION_FAILED', { priority: 1 }),
  req(
    'no schema',
    'POST',
    '/api/event-schemas',
    { source: MARK, category: 'c', action: 'route' },
    400,
    'VALIDATION_FAILED',
  ),
  req('empty body', 'POST', '/api/event-schemas', '', 400, 'INVALID_JSON'),
  req('not JSON', 'POST', '/api/event-schemas', '{"source":', 400, 'INVALID_JSON'),
  req(
    'a body nested deeper than 64',
    'POST',
    '/api/event-schemas',
    { source: MARK, category: 'c', action: 'route', schema: nested(40) },
    400,
    'VALIDATION_FAILED',
  ),
  // --- scopes and ids
  req(
    'a key without event_schemas:write',
    'POST',
    '/api/event-schemas',
    { source: MARK, category: 'c', action: 'route', schema: { type: 'object' } },
    403,
    'INSUFFICIENT_SCOPE',
    '@viewer',
  ),
  req('a key without event_schemas:read', 'GET', '/api/event-schemas', undefined, 403, 'INSUFFICIENT_SCOPE', '@api'),
  req('no key', 'GET', '/api/event-schemas', undefined, 401, 'MISSING_CREDENTIALS', ''),
  req('a missing schema', 'GET', `/api/event-schemas/${MISSING}`, undefined, 404, 'EVENT_SCHEMA_NOT_FOUND'),
  req('a malformed id', 'GET', '/api/event-schemas/..%2f..%2fetc', undefined, 404, 'EVENT_SCHEMA_NOT_FOUND'),
  req(
    'PATCH a missing schema',
    'PATCH',
    `/api/event-schemas/${MISSING}`,
    { action: 'route' },
    404,
    'EVENT_SCHEMA_NOT_FOUND',
  ),
  req(
    'PATCH with a bad action',
    'PATCH',
    `/api/event-schemas/${MISSING}`,
    { action: 'ignore' },
    400,
    'VALIDATION_FAILED',
  ),
  req(
    'a version of a missing schema',
    'POST',
    `/api/event-schemas/${MISSING}/versions`,
    { schema: { type: 'object' } },
    404,
    'EVENT_SCHEMA_NOT_FOUND',
  ),
  req(
    'an unsafe version',
    'POST',
    `/api/event-schemas/${MISSING}/versions`,
    { schema: { type: 'string', pattern: '(a)\\1' } },
    400,
    'INVALID_SCHEMA',
  ),
  req('DELETE a missing schema', 'DELETE', `/api/event-schemas/${MISSING}`, undefined, 404, 'EVENT_SCHEMA_NOT_FOUND'),
  req('a cursor it did not issue', 'GET', '/api/event-schemas?cursor=bm9wZQ', undefined, 400, 'INVALID_PARAMETER'),
  req('limit 0', 'GET', '/api/event-schemas?limit=0', undefined, 400, 'INVALID_PARAMETER'),
  req('an unknown parameter', 'GET', '/api/event-schemas?source=x', undefined, 400, 'INVALID_PARAMETER'),
  req('PUT', 'PUT', '/api/event-schemas', { source: MARK }, 405, 'METHOD_NOT_ALLOWED'),
];
