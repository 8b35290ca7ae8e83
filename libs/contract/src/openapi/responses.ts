import { ERROR_CODES, type ErrorCode } from '../error-codes.js';

/**
 * The responses every route family of the OpenAPI document builds on: the error envelope
 * (one response per HTTP status, listing the codes a route may answer, from error-codes.ts),
 * the success envelope {success: true, data}, pages with next_cursor, and JSON bodies by
 * component name. A route family says which codes it answers; the status, wording and
 * Retry-After follow from the error list, so no family writes them again.
 */

export type Json = Record<string, unknown>;

/** A `$ref` to one of components.schemas. */
export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });

/** Our schemas reference each other by `$id`; OpenAPI wants component refs. */
export function component(schema: Json): Json {
  const { $id: _id, ...rest } = schema;
  return JSON.parse(JSON.stringify(rest).replace(/"\$ref":"([A-Za-z]+)"/g, '"$ref":"#/components/schemas/$1"')) as Json;
}

/** {success: true, data} with `data` as given. */
export const envelopeOf = (data: Json): Json => ({
  type: 'object',
  required: ['success', 'data'],
  properties: { success: { const: true }, data },
});

/** {success: true, data: [items], next_cursor}: one page of a keyset-paged list. */
export const pageOf = (item: string): Json => ({
  type: 'object',
  required: ['success', 'data', 'next_cursor'],
  properties: {
    success: { const: true },
    data: { type: 'array', items: ref(item) },
    next_cursor: { type: ['string', 'null'] },
  },
});

/** A JSON request body: the component named. */
export const jsonBody = (name: string): Json => ({
  required: true,
  content: { 'application/json': { schema: ref(name) } },
});

/** A JSON success response whose body is `schema`, with headers when given. */
export const jsonOk = (description: string, schema: Json, headers?: Json): Json => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});

const errorResponse = (codes: ErrorCode[], description: string, headers?: Json): Json => ({
  description: `${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`,
  ...(headers ? { headers } : {}),
  content: {
    'application/json': {
      schema: {
        allOf: [{ $ref: '#/components/schemas/Failure' }, { properties: { code: { enum: codes } } }],
      },
    },
  },
});

const retryAfter = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } };

function byStatus(codes: ErrorCode[]): Record<string, ErrorCode[]> {
  const out: Record<string, ErrorCode[]> = {};
  for (const c of codes) (out[String(ERROR_CODES[c].status)] ??= []).push(c);
  return out;
}

/** The codes an error response of `errors` lists (its schema's enum). */
function codesOf(response: Json | undefined): ErrorCode[] {
  const json = (response?.content as Json | undefined)?.['application/json'] as
    { schema?: { allOf?: Json[] } } | undefined;
  return (json?.schema?.allOf?.[1]?.properties as { code?: { enum: ErrorCode[] } } | undefined)?.code?.enum ?? [];
}

/** `responses` with `more` codes added to the error responses of their statuses. */
export function withCodes(responses: Json, more: ErrorCode[]): Json {
  const out = { ...responses };
  for (const [status, cs] of Object.entries(byStatus(more))) {
    const had = codesOf(out[status] as Json | undefined);
    Object.assign(out, errors([...had, ...cs.filter((c) => !had.includes(c))]));
  }
  return out;
}

/** The error responses of a route: one per status its codes map to. */
export function errors(codes: ErrorCode[]): Json {
  const out: Json = {};
  for (const [status, cs] of Object.entries(byStatus(codes))) {
    const retriable = status === '503' || status === '429';
    out[status] = errorResponse(
      cs,
      retriable ? 'Nothing was accepted; retry after Retry-After.' : 'Refused.',
      retriable ? retryAfter : undefined,
    );
  }
  return out;
}

/** What any route taking an API key (or the session cookie) may answer about it. */
const authErrors: ErrorCode[] = [
  'MISSING_CREDENTIALS',
  'INVALID_CREDENTIALS',
  'KEY_EXPIRED',
  'SESSION_EXPIRED',
  'INSUFFICIENT_SCOPE',
  'MONITOR_NOT_ALLOWED',
];

/** What any route reading a JSON body may answer about it. */
export const bodyErrors: ErrorCode[] = [
  'INVALID_JSON',
  'VALIDATION_FAILED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
];

/** What any route reading or writing a store may answer when it fails. */
export const storeErrors: ErrorCode[] = ['INTERNAL_ERROR', 'STORE_UNAVAILABLE'];

/** The errors of a route that takes an API key and reads or writes a store, with the route's own `more`. */
export const keyErrors = (...more: ErrorCode[]): Json => errors([...authErrors, ...more, ...storeErrors]);

/** The errors of a route on one monitor (/api/monitors/{id}/...), with the route's own `more`. */
export const monitorErrors = (...more: ErrorCode[]): Json =>
  keyErrors('INVALID_PARAMETER', 'MONITOR_NOT_FOUND', ...more);
