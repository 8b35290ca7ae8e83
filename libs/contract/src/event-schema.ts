import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types/index.js';
import addFormatsModule from 'ajv-formats';
import { setFlagsFromString } from 'node:v8';
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
 * in the index: it sets V8 flags of the process (node:v8), which the browser SDK has not.
 *
 * The dialect is JSON Schema draft 2020-12, compiled by ajv in strict mode. Validation must
 * stay bounded whatever a tenant submits. Every `pattern` and `patternProperties` key is a
 * V8 regular expression without the `u` flag, run by V8's backtracking engine (native
 * speed: about 0.07 µs for a typical pattern) until it backtracks more than V8's limit
 * (`--regexp-backtracks-before-fallback`, 50,000), when V8 runs it again on its linear-time
 * engine (`--enable-experimental-regexp-engine-on-excessive-backtracks`): a pattern such as
 * `^(a+)+$` on a long input costs milliseconds, not years. A pattern the linear-time engine
 * cannot run (backreferences, lookaround) is refused when the schema is submitted, as V8
 * says when it is compiled with the `l` flag. Measured in test/unit/event-schemas.test.ts.
 * (re2-wasm did the same at about 2 µs a pattern: a WebAssembly call and a string copy each
 * time, which made a schema cost a batched event 15-45 % more CPU; docs/event-schemas.md.)
 * Nothing is fetched: a `$ref` must point inside the schema.
 */

// NOTE: ajv-formats is CommonJS with a default export (see ajv.ts).
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
  formats: string[],
) => Ajv2020;

let linearEngine = false;

/**
 * Turns on V8's linear-time engine for this process: the `l` flag (to ask whether a
 * pattern can run there) and the fallback to it after excessive backtracking. Process-wide
 * and idempotent; done before the first schema is compiled.
 */
function enableLinearEngine(): void {
  if (linearEngine) return;
  setFlagsFromString('--enable-experimental-regexp-engine');
  setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');
  linearEngine = true;
}

export { EVENT_SCHEMA_LIMITS, EVENT_SCHEMA_DIALECT, EVENT_SCHEMA_FORMATS, EVENT_SCHEMA_ACTIONS };
export type { EventSchemaAction };

/**
 * ajv's regular-expression engine (its `code.regExp`): V8's, after checking that the
 * linear-time engine can run the pattern (a SyntaxError otherwise, which refuses the
 * schema). Never the `u` flag: V8 falls back to the linear engine only without it.
 */
const boundedEngine: RegExpEngine = Object.assign(
  (pattern: string, flags: string) => {
    enableLinearEngine();
    // eslint-disable-next-line no-invalid-regexp -- `l` (linear) exists once enableLinearEngine ran
    new RegExp(pattern, 'l');
    return new RegExp(pattern, flags.replace(/[uv]/g, ''));
  },
  { code: 'RegExp' },
);

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    allErrors: true,
    allowUnionTypes: true,
    // One schema per instance: nothing a tenant names ($id, $anchor) reaches another's.
    addUsedSchema: false,
    // Never fetch: with no loadSchema an unresolved $ref fails compilation.
    code: { regExp: boundedEngine },
    unicodeRegExp: false,
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
    } else if (k === '$dynamicRef' || k === '$dynamicAnchor') {
      problems.push({ path: at, message: 'is not supported: use $ref with a JSON pointer (#/…)' });
    } else if (k === 'uniqueItems' && v === true) {
      const max = (node as Record<string, unknown>).maxItems;
      if (typeof max !== 'number' || max > EVENT_SCHEMA_LIMITS.maxUniqueItems) {
        problems.push({
          path: at,
          message: `needs maxItems of at most ${EVENT_SCHEMA_LIMITS.maxUniqueItems} beside it (every pair of items is compared)`,
        });
      }
    }
    walk(v, at, depth + 1, problems);
  }
}

/**
 * What following the schema's `$ref`s makes of it: a reference that leads back to itself
 * (recursive schemas are refused), one that is not `#` or a JSON pointer (`#/…`: anchors
 * are refused), or more than maxExpandedSubschemas subschemas once every reference is
 * followed (a chain of `$defs` naming the next twice doubles per link: validation time
 * would grow exponentially). Linear in the schema: each object's size is computed once.
 */
function referenceProblems(root: object): Problem[] {
  const limit = EVENT_SCHEMA_LIMITS.maxExpandedSubschemas;
  const problems: Problem[] = [];
  const sizes = new Map<object, number>();
  const open = new Set<object>();
  const target = (ref: string): unknown => {
    if (ref === '#') return root;
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = root;
    for (const raw of ref.slice(2).split('/')) {
      let key: string;
      try {
        key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      } catch {
        return undefined;
      }
      if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
      node = (node as Record<string, unknown>)[key];
    }
    return node;
  };
  const size = (node: unknown, path: string): number => {
    if (node === null || typeof node !== 'object') return 0;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    if (open.has(node)) {
      problems.push({ path, message: 'leads back to itself: recursive schemas are refused' });
      return limit + 1;
    }
    open.add(node);
    let n = 1;
    for (const [k, v] of Object.entries(node)) {
      const at = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      n += size(v, at);
      if (k === '$ref' && typeof v === 'string') {
        const t = target(v);
        if (t === undefined) problems.push({ path: at, message: 'must be # or a JSON pointer (#/…) into the schema' });
        else n += size(t, at);
      }
      if (n > limit || problems.length > 0) break;
    }
    open.delete(node);
    sizes.set(node, Math.min(n, limit + 1));
    return Math.min(n, limit + 1);
  };
  const total = size(root, '');
  if (problems.length === 0 && total > limit) {
    problems.push({
      path: '/',
      message: `expands to more than ${limit} subschemas once its $refs are followed (validation would take too long)`,
    });
  }
  return problems.slice(0, 1);
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
    const unsafe = /cannot be executed in linear time/i;
    return [
      {
        path: '/',
        message: unsafe.test(message)
          ? `a pattern the linear-time engine cannot run (backreferences, lookaround): ${message}`
          : `is not a JSON Schema (draft 2020-12, strict): ${message}`,
      },
    ];
  }
  return referenceProblems(schema);
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
