import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import {
  CONFIG_SECTIONS,
  type ConfigDocument,
  type ConfigItem,
  type ConfigSection,
  type SecretPin,
} from '@telemetry/contract';
import {
  EXTENSION_PATTERN,
  ITEM_NAMES,
  REFERENCES,
  secretPatterns,
  telemetryFileSchema,
  type PointerPattern,
} from './file-schema.js';
import {
  duplicateKeys,
  findNode,
  pointerOf,
  positionOf,
  problemAt,
  segmentsOf,
  type FileProblem,
  type YamlFile,
} from './yaml-file.js';

// NOTE: ajv-formats is CommonJS with a default export (as in libs/contract/src/ajv.ts).
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
  formats: string[],
) => Ajv;

/** The file's schema, compiled (once per process: the CLI validates one file). */
export function compileFileSchema(): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true });
  addFormats(ajv, ['date-time', 'uuid', 'email', 'uri']);
  return ajv.compile(telemetryFileSchema());
}

export type Env = Readonly<Record<string, string | undefined>>;

/** A secret reference: `{env: NAME}`, `fingerprint` as export writes it. */
interface SecretRef {
  env: string;
  fingerprint?: string;
}
const isSecretRef = (v: unknown): v is SecretRef =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  typeof (v as { env?: unknown }).env === 'string' &&
  Object.keys(v).every((k) => k === 'env' || k === 'fingerprint');

/** An environment variable counts as set when it is not empty. */
const envValue = (env: Env, name: string): string | undefined => {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
};

/** Every value at `pattern` under `root` (`*`: each property or index), with its pointer relative to root. */
export function matchesOf(root: unknown, pattern: PointerPattern): [string, unknown][] {
  let current: [(string | number)[], unknown][] = [[[], root]];
  for (const seg of segmentsOf(pattern)) {
    const next: [(string | number)[], unknown][] = [];
    for (const [path, v] of current) {
      if (v === null || typeof v !== 'object') continue;
      if (seg === '*') {
        if (Array.isArray(v)) v.forEach((x, i) => next.push([[...path, i], x]));
        else for (const [k, x] of Object.entries(v)) next.push([[...path, k], x]);
      } else if (!Array.isArray(v) && Object.hasOwn(v, seg)) {
        next.push([[...path, seg], (v as Record<string, unknown>)[seg]]);
      }
    }
    current = next;
  }
  return current.map(([path, v]) => [pointerOf(path), v]);
}

const sectionsOf = (data: unknown): [ConfigSection, unknown[]][] =>
  data !== null && typeof data === 'object'
    ? CONFIG_SECTIONS.flatMap((s): [ConfigSection, unknown[]][] => {
        const items = (data as Record<string, unknown>)[s];
        return Array.isArray(items) ? [[s, items]] : [];
      })
    : [];

const keyOf = (item: unknown): string | undefined =>
  item !== null && typeof item === 'object' && typeof (item as { key?: unknown }).key === 'string'
    ? (item as { key: string }).key
    : undefined;

/**
 * Everything wrong with the file, offline: what its schema refuses (unknown keys, wrong
 * types, a secret written inline), keys repeated in a map or in a section, references to
 * keys the file does not define, `{env: NAME}` whose variable is not set (without a
 * fingerprint to keep the stored value). Sorted by position.
 */
export function validateFile(y: YamlFile, env: Env, validate: ValidateFunction = compileFileSchema()): FileProblem[] {
  const problems: FileProblem[] = [...duplicateKeys(y)];
  if (!validate(y.data)) problems.push(...schemaProblems(y, validate.errors ?? []));
  const sections = sectionsOf(y.data);
  const defined = new Map<ConfigSection, Set<string>>();
  for (const [section, items] of sections) {
    const first = new Map<string, number>();
    const keys = new Set<string>();
    items.forEach((item, i) => {
      const key = keyOf(item);
      if (key === undefined) return;
      keys.add(key);
      const seen = first.get(key);
      if (seen === undefined) {
        first.set(key, i);
        return;
      }
      const p = positionOf(y, findNode(y, `/${section}/${seen}/key`).node);
      problems.push(
        problemAt(
          y,
          `/${section}/${i}/key`,
          `duplicate ${ITEM_NAMES[section]} key "${key}" (first at line ${p.line}, column ${p.column})`,
        ),
      );
    });
    defined.set(section, keys);
  }
  for (const [section, items] of sections) {
    items.forEach((item, i) => {
      const at = `/${section}/${i}`;
      for (const ref of REFERENCES[section]) {
        const keys = defined.get(ref.to);
        // A section the file leaves out is not managed by it: its keys are the tenant's, not checked offline.
        if (!keys) continue;
        for (const [pointer, v] of matchesOf(item, ref.at)) {
          if (typeof v === 'string' && !keys.has(v)) {
            problems.push(problemAt(y, at + pointer, `there is no ${ITEM_NAMES[ref.to]} with key "${v}" in ${ref.to}`));
          }
        }
      }
      for (const { at: pattern, optional } of secretPatterns(section, item)) {
        for (const [pointer, v] of matchesOf(item, pattern)) {
          if (isSecretRef(v)) {
            if (envValue(env, v.env) === undefined && v.fingerprint === undefined) {
              problems.push(
                problemAt(
                  y,
                  `${at}${pointer}/env`,
                  `environment variable ${v.env} is not set (set it, or add the stored value's fingerprint: telemetry export writes it)`,
                ),
              );
            }
          } else if (optional && typeof v === 'string' && hasCredentials(v)) {
            problems.push(problemAt(y, at + pointer, INLINE_CREDENTIALS));
          }
        }
      }
    });
  }
  return sortProblems(dedupe(problems));
}

const INLINE_SECRET = 'a secret is never written in the file: name the environment variable holding it, {env: NAME}';
const INLINE_CREDENTIALS =
  'this URL carries credentials: give the whole URL in an environment variable, {env: NAME}, not in the file';

/** user:password@ in a URL. */
function hasCredentials(url: string): boolean {
  try {
    const u = new URL(url);
    return u.username !== '' || u.password !== '';
  } catch {
    return false;
  }
}

export function sortProblems(problems: FileProblem[]): FileProblem[] {
  return problems.sort((a, b) => a.line - b.line || a.column - b.column || a.message.localeCompare(b.message));
}

function dedupe(problems: FileProblem[]): FileProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const k = `${p.line}:${p.column}:${p.path}:${p.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

const article = (t: string): string => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);
const typeName = (t: unknown): string =>
  (Array.isArray(t) ? t : [t]).map((x) => (x === 'null' ? 'null' : article(String(x)))).join(' or ');

function dataAt(data: unknown, pointer: string): unknown {
  let v = data;
  for (const s of segmentsOf(pointer)) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[s];
  }
  return v;
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length]!;
}

function suggestion(unknown: string, schemaProps: string[]): string {
  const best = schemaProps.map((p) => [p, distance(unknown.toLowerCase(), p)] as const).sort((a, b) => a[1] - b[1])[0];
  return best && best[1] <= Math.max(2, Math.floor(unknown.length / 3)) ? `; did you mean "${best[0]}"?` : '';
}

/** ajv's errors as the file's problems: one per thing wrong, worded for a YAML file's reader. */
function schemaProblems(y: YamlFile, errors: ErrorObject[]): FileProblem[] {
  const kept: ErrorObject[] = [];
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (e.keyword !== 'anyOf' && e.keyword !== 'oneOf') {
      kept.push(e);
      continue;
    }
    // ajv puts the branches' errors just before the anyOf's own: take them back out.
    const P = e.instancePath;
    const branch: ErrorObject[] = [];
    while (kept.length > 0) {
      const last = kept[kept.length - 1]!;
      if (last.instancePath !== P && !last.instancePath.startsWith(`${P}/`)) break;
      branch.unshift(kept.pop()!);
    }
    // Each branch's errors (a $ref'd branch's name the referenced schema's path). A branch for
    // another kind of value (a string where {env: NAME} is allowed too) says nothing; of the
    // others, the one that came closest (fewest errors) says what is wrong.
    const groups = new Map<string, ErrorObject[]>();
    for (const b of branch) {
      const rest = b.schemaPath.startsWith(`${e.schemaPath}/`) ? b.schemaPath.slice(e.schemaPath.length + 1) : '';
      const id = rest ? rest.split('/')[0]! : b.schemaPath.split('/').slice(0, 3).join('/');
      groups.set(id, [...(groups.get(id) ?? []), b]);
    }
    const relevant = [...groups.values()]
      .filter((g) => !g.some((b) => b.keyword === 'type' && b.instancePath === P))
      .sort((a, b) => a.length - b.length);
    if (relevant.length > 0) kept.push(...relevant[0]!);
    else {
      const types = [...new Set(branch.flatMap((b) => (b.keyword === 'type' ? [b.params.type as unknown] : [])))];
      kept.push({
        ...e,
        keyword: 'type',
        params: { type: types.flat() },
        message: `must be ${typeName(types.flat())}`,
      });
    }
  }
  return kept.map((e) => describe(y, e));
}

function describe(y: YamlFile, e: ErrorObject): FileProblem {
  const P = e.instancePath;
  const where = (p: string, m: string, at: 'value' | 'key' = 'value'): FileProblem => problemAt(y, p, m, at);
  switch (e.keyword) {
    case 'additionalProperties': {
      const extra = String(e.params.additionalProperty);
      const props = Object.keys((e.parentSchema as { properties?: object } | undefined)?.properties ?? {});
      return where(pointerOf([...segmentsOf(P), extra]), `unknown key "${extra}"${suggestion(extra, props)}`, 'key');
    }
    case 'required': {
      const missing = String(e.params.missingProperty);
      return where(P, `missing required key "${missing}"`);
    }
    case 'type': {
      const v = dataAt(y.data, P);
      if (e.schemaPath.startsWith('#/definitions/secret/') && (v === null || typeof v !== 'object')) {
        return where(P, INLINE_SECRET);
      }
      return where(P, `must be ${typeName(e.params.type)}`);
    }
    case 'enum':
      return where(P, `must be one of: ${(e.params.allowedValues as unknown[]).map((v) => String(v)).join(', ')}`);
    case 'const':
      return where(P, `must be ${JSON.stringify(e.params.allowedValue)}`);
    case 'pattern':
      if (e.schemaPath.startsWith('#/definitions/key/')) {
        return where(P, `must be a key: 1 to 63 of a-z, 0-9, ".", "_", "-", starting with a letter or digit`);
      }
      if (e.schemaPath.startsWith('#/definitions/secret/')) {
        return where(P, 'must be the name of an environment variable (letters, digits, _; not starting with a digit)');
      }
      return where(P, e.message ?? 'is not valid');
    default:
      return where(P, e.message ?? 'is not valid');
  }
}

/**
 * The document to send: `{env: NAME}` replaced by the variable's value, or, when it is not
 * set and the file gives the stored value's fingerprint, by a SecretPin (the server keeps
 * the stored value if it still has that fingerprint). Call after validateFile found nothing.
 */
export function resolveSecrets(data: unknown, env: Env): ConfigDocument {
  const doc = structuredClone(data) as ConfigDocument;
  for (const k of Object.keys(doc))
    if (new RegExp(EXTENSION_PATTERN).test(k)) delete (doc as Record<string, unknown>)[k];
  for (const section of CONFIG_SECTIONS) {
    for (const item of doc[section] ?? []) {
      for (const { at } of secretPatterns(section, item)) {
        for (const [pointer, v] of matchesOf(item, at)) {
          if (!isSecretRef(v)) continue;
          const value = envValue(env, v.env);
          const resolved: string | SecretPin | undefined =
            value ?? (v.fingerprint !== undefined ? { fingerprint: v.fingerprint } : undefined);
          if (resolved === undefined) throw new Error(`environment variable ${v.env} is not set`);
          setAt(item, pointer, resolved);
        }
      }
    }
  }
  return doc;
}

function setAt(item: ConfigItem, pointer: string, value: unknown): void {
  const segs = segmentsOf(pointer);
  let v: Record<string, unknown> = item;
  for (const s of segs.slice(0, -1)) v = v[s] as Record<string, unknown>;
  v[segs[segs.length - 1]!] = value;
}
