import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import addFormatsModule from 'ajv-formats';
import * as re2Module from 're2-wasm';
import { describeErrors, type Problem } from './ajv.js';
import { LIMITS } from './limits.js';
import {
  EVENT_SCHEMA_ACTIONS,
  EVENT_SCHEMA_DIALECT,
  EVENT_SCHEMA_FORMATS,
  EVENT_SCHEMA_LIMITS,
  type EventSchemaAction,
} from './event-schema-api.js';

/**
 * Tenants' event schemas (docs/event-schemas.md): what a submitted JSON Schema may be, and
 * its compiled validator. A separate entry point (`@telemetry/contract/event-schema`), not
 * in the index: it loads a WebAssembly regular-expression engine the browser SDK and most
 * services never need.
 *
 * The dialect is JSON Schema draft 2020-12, compiled by ajv in strict mode. Validation must
 * stay bounded whatever a tenant submits: every `pattern` and `patternProperties` key runs
 * on RE2 (re2-wasm, Apache-2.0), whose matching time is linear in the input, so a pattern
 * such as `^(a+)+$` costs what any other does; a pattern RE2 cannot run (backreferences,
 * lookaround) is refused. Nothing is fetched: a `$ref` must point inside the schema.
 */

// NOTE: ajv-formats is CommonJS with a default export (see ajv.ts).
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
  formats: string[],
) => Ajv2020;

// NOTE: re2-wasm is CommonJS: a namespace import has RE2 itself or under `default`, by toolchain.
type Re2Class = new (pattern: string, flags: string) => { test(s: string): boolean };
const re2 = re2Module as unknown as { RE2?: Re2Class; default?: { RE2: Re2Class } };
const RE2 = (re2.RE2 ?? re2.default?.RE2) as Re2Class;

export { EVENT_SCHEMA_LIMITS, EVENT_SCHEMA_DIALECT, EVENT_SCHEMA_FORMATS, EVENT_SCHEMA_ACTIONS };
export type { EventSchemaAction };

/** RE2 as ajv's regular-expression engine (ajv's `code.regExp`). */
const re2Engine: RegExpEngine = Object.assign((pattern: string, flags: string) => new RE2(pattern, flags), {
  code: 'new (require("re2-wasm").RE2)',
});

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    allErrors: true,
    allowUnionTypes: true,
    // One schema per instance: nothing a tenant names ($id, $anchor) reaches another's.
    addUsedSchema: false,
    // Never fetch: with no loadSchema an unresolved $ref fails compilation.
    code: { regExp: re2Engine },
  });
  addFormats(ajv, EVENT_SCHEMA_FORMATS);
  return ajv;
}

/** Walks the schema's JSON: depth, $ref targets, $schema, format: regex. */
function walk(node: unknown, path: string, depth: number, problems: Problem[]): void {
  if (problems.length >= 10) return;
  if (depth > EVENT_SCHEMA_LIMITS.maxSchemaDepth) {
    problems.push({ path, message: `nests deeper than ${EVENT_SCHEMA_LIMITS.maxSchemaDepth} levels` });
    return;
  }
  if (Array.isArray(node)) {
    node.forEach((v, i) => walk(v, `${path}/${i}`, depth + 1, problems));
    return;
  }
  if (node === null || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    const at = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string' && !v.startsWith('#')) {
      problems.push({
        path: at,
        message: 'must point inside the schema (start with #): remote references are refused',
      });
    } else if (k === '$schema' && v !== EVENT_SCHEMA_DIALECT && depth === 0) {
      problems.push({ path: at, message: `must be ${EVENT_SCHEMA_DIALECT} (or absent)` });
    } else if (k === 'format' && v === 'regex') {
      problems.push({ path: at, message: 'format regex is refused (a client-chosen regular expression)' });
    }
    walk(v, at, depth + 1, problems);
  }
}

/** Why a submitted schema is refused (empty: it is fine), as `details.problems` of INVALID_SCHEMA. */
export function eventSchemaProblems(schema: unknown): Problem[] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    return [{ path: '/', message: 'must be a JSON Schema object' }];
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema));
  if (bytes > EVENT_SCHEMA_LIMITS.maxSchemaBytes) {
    return [{ path: '/', message: `is ${bytes} bytes; at most ${EVENT_SCHEMA_LIMITS.maxSchemaBytes}` }];
  }
  const problems: Problem[] = [];
  walk(schema, '', 0, problems);
  if (problems.length > 0) return problems;
  try {
    newAjv().compile(schema);
  } catch (err) {
    const message = String((err as Error).message ?? err).slice(0, 300);
    const unsafe = /invalid perl operator|invalid escape|invalid repetition|missing \)|invalid character class/i;
    return [
      {
        path: '/',
        message: unsafe.test(message)
          ? `a pattern the linear-time engine (RE2) cannot run: ${message}`
          : `is not a JSON Schema (draft 2020-12, strict): ${message}`,
      },
    ];
  }
  return [];
}

/** A compiled schema: the violations of a payload (empty: it conforms). */
export type EventSchemaCheck = (payload: unknown) => Problem[];

/** Compiles a schema eventSchemaProblems accepted (throws otherwise). */
export function compileEventSchema(schema: object): EventSchemaCheck {
  const validate: ValidateFunction = newAjv().compile(schema);
  return (payload) =>
    validate(payload)
      ? []
      : describeErrors(validate.errors as ErrorObject[] | null, LIMITS.maxSchemaViolations).map((p) => ({
          path: p.path.slice(0, 1024),
          message: p.message.slice(0, 1024),
        }));
}
