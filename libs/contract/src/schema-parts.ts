/** Pieces shared by the JSON Schemas. */
import { MONITOR_LIMITS } from './limits.js';

export const dateTime = { type: 'string', format: 'date-time', maxLength: 64 } as const;

/**
 * An object schema that takes nothing but its `properties`, `required` of them: every object
 * we accept or publish is closed, so a misspelt field is refused rather than ignored.
 */
export function closed<const R extends readonly string[], const P extends object>(required: R, properties: P) {
  return { type: 'object', additionalProperties: false, required, properties } as const;
}

/** `closed`, named by `$id`: a target of ajv's `$ref` and a component of the OpenAPI document. */
export function closedSchema<const Id extends string, const R extends readonly string[], const P extends object>(
  $id: Id,
  required: R,
  properties: P,
) {
  return { $id, ...closed(required, properties) } as const;
}

/** A PATCH body: any of `properties`, at least one. */
export function patchSchema<const Id extends string, const P extends object>($id: Id, properties: P) {
  return { $id, type: 'object', additionalProperties: false, minProperties: 1, properties } as const;
}

/**
 * A browser check's failure screenshot: a PNG, base64 (at most MONITOR_LIMITS.maxScreenshotBytes
 * before encoding), as the screenshots topic and a run-once reply carry it.
 */
export const screenshotBase64 = {
  type: 'string',
  minLength: 8,
  maxLength: Math.ceil(MONITOR_LIMITS.maxScreenshotBytes / 3) * 4,
  pattern: '^[A-Za-z0-9+/]+={0,2}$',
} as const;
