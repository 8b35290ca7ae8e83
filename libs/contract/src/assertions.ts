import { MONITOR_LIMITS } from './limits.js';
import type { Problem } from './validators.js';

/**
 * The assertion language of docs/assertions.md: `<subject> <operator> <value>`, such as
 * `status == 200`, `response_time < 500`, `header.content-type contains "json"`,
 * `$.data.items.length > 0`, `$.status == "ok"`, `body matches "^ok"`,
 * `tls.days_left >= 14`, `dns.answers contains "192.0.2.1"`. Parsed once when a monitor
 * is stored (problems), and again by the runner (a parsed form is cheap to keep).
 *
 * Grammar (whitespace around a symbolic operator is optional, around a word one required):
 *
 *     assertion := subject operator value
 *     subject   := status | response_time | body | header.<name> | tls.days_left
 *                | dns.answers[.length] | path[.length]
 *     path      := $ ( .name | [index] | ["key"] )*         name: [A-Za-z_][A-Za-z0-9_-]*
 *     operator  := == | != | < | <= | > | >= | contains | !contains | matches
 *     value     := a JSON number, "string", true, false or null
 *
 * Cost is bounded whatever a tenant writes: an assertion is at most maxAssertionLength
 * characters, a path at most ASSERTION_LIMITS.maxPathDepth steps, an index at most
 * maxArrayIndex, the body judged at most what the probe read, and `matches` runs on V8's
 * linear-time regular-expression engine (see linearRegExp).
 *
 * NOTE: this module is bundled into the browser console (through the monitor types): it
 * imports nothing of Node's. The linear engine is reached at run time where there is one.
 */

/** Which answers an assertion is judged on: the subjects it may name differ. */
export type AssertionContext = 'http' | 'tls' | 'dns' | 'api_step';

export const ASSERTION_OPERATORS = ['==', '!=', '<', '<=', '>', '>=', 'contains', '!contains', 'matches'] as const;
export type AssertionOperator = (typeof ASSERTION_OPERATORS)[number];

/** A JSON literal on the right of an operator. */
export type AssertionLiteral = number | string | boolean | null;

/** Bounds of one assertion's evaluation (docs/assertions.md, "Limits"). */
export const ASSERTION_LIMITS = {
  /** Steps of a JSON path (`$.a.b[0]` has 3). */
  maxPathDepth: 32,
  /** The largest array index a path may name (and the most negative, from the end). */
  maxArrayIndex: 100_000,
  /** Bytes of a response body an http check keeps for its assertions (the probe reads no more). */
  maxBodyBytes: 1024 * 1024,
} as const;

/** One step of a JSON path: a member name or an array index (negative: from the end). */
export type PathStep = { key: string } | { index: number };

/** What an assertion names. */
export type SubjectRef =
  | { kind: 'status' }
  | { kind: 'response_time' }
  | { kind: 'body' }
  | { kind: 'header'; name: string }
  | { kind: 'tls_days_left' }
  | { kind: 'dns_answers'; length: boolean }
  | { kind: 'json'; path: readonly PathStep[]; length: boolean };

/** A parsed assertion. */
export interface Assertion {
  /** As written (trimmed): what a failure's `detail` names. */
  readonly text: string;
  readonly subject: SubjectRef;
  readonly operator: AssertionOperator;
  readonly value: AssertionLiteral;
  /** `matches`: the pattern on the linear-time engine; undefined where there is none (a browser). */
  readonly regex?: RegExp;
}

/** What an assertion is judged on: the parts of one answer a check saw. */
export interface AssertionSubject {
  status_code?: number;
  /** Milliseconds. */
  response_time?: number;
  /** A response header's value by name (any case); undefined when absent. */
  header?: (name: string) => string | undefined;
  /** The (read part of the) response body, as text. */
  body?: string;
  /** The body was longer than what was read: `body` is its start only. */
  body_truncated?: boolean;
  tls_days_left?: number;
  dns_answers?: readonly string[];
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

const SUBJECTS: Record<AssertionContext, string> = {
  http: 'status, response_time, header.<name>, body or a JSON path ($, $.a.b, $.items[0].id, $["odd key"])',
  api_step: 'status, response_time, header.<name>, body or a JSON path ($, $.a.b, $.items[0].id, $["odd key"])',
  tls: 'tls.days_left or response_time',
  dns: 'dns.answers, dns.answers.length or response_time',
};

const CONTEXT_NAMES: Record<AssertionContext, string> = {
  http: 'an http assertion',
  api_step: 'a step assertion',
  tls: 'a tls assertion',
  dns: 'a dns assertion',
};

type SubjectType = 'number' | 'text' | 'json' | 'list';

function subjectType(s: SubjectRef): SubjectType {
  switch (s.kind) {
    case 'status':
    case 'response_time':
    case 'tls_days_left':
      return 'number';
    case 'dns_answers':
      return s.length ? 'number' : 'list';
    case 'json':
      return s.length ? 'number' : 'json';
    case 'body':
    case 'header':
      return 'text';
  }
}

const HEADER_NAME = /^[A-Za-z0-9#$%&'*+.^_`|~-]+/;
const PATH_NAME = /^[A-Za-z_][A-Za-z0-9_-]*/;

function fail<T>(problem: string): Parsed<T> {
  return { ok: false, problem };
}

/**
 * A JSON path from `text` at `at` (which holds `$`): its steps, a final `.length` apart,
 * and where it ends. A `.length` is the length of an array or a string, and the member
 * named length of an object (`$["length"]` is always the member).
 */
function parsePath(text: string, at: number): Parsed<{ path: PathStep[]; length: boolean; end: number }> {
  const path: PathStep[] = [];
  let i = at + 1;
  let length = false;
  for (;;) {
    const c = text[i];
    if (c === '.') {
      const name = PATH_NAME.exec(text.slice(i + 1))?.[0];
      if (name === undefined)
        return fail(`a path step after "." at character ${i + 1} must be a name (or use ["key"])`);
      path.push({ key: name });
      i += 1 + name.length;
    } else if (c === '[') {
      const rest = text.slice(i + 1);
      const index = /^(-?\d+)\]/.exec(rest);
      if (index) {
        const n = Number(index[1]);
        if (!Number.isSafeInteger(n) || Math.abs(n) > ASSERTION_LIMITS.maxArrayIndex) {
          return fail(`an array index is at most ${ASSERTION_LIMITS.maxArrayIndex} (from either end)`);
        }
        path.push({ index: n === 0 ? 0 : n });
        i += 1 + index[0].length;
      } else if (rest.startsWith('"')) {
        const key = jsonStringAt(rest);
        if (key === undefined || rest[key.end] !== ']') {
          return fail(`a path step at character ${i + 1} must be [index] or ["key"] (a JSON string)`);
        }
        path.push({ key: key.value });
        i += 1 + key.end + 1;
      } else {
        return fail(`a path step at character ${i + 1} must be [index] or ["key"] (a JSON string)`);
      }
    } else {
      break;
    }
    if (path.length > ASSERTION_LIMITS.maxPathDepth) {
      return fail(`a JSON path has at most ${ASSERTION_LIMITS.maxPathDepth} steps`);
    }
  }
  const last = path.at(-1);
  if (last && 'key' in last && last.key === 'length' && !text.slice(at, i).endsWith('"]')) {
    path.pop();
    length = true;
  }
  return { ok: true, value: { path, length, end: i } };
}

/** The JSON string at the start of `s`: its value and where it ends; undefined when there is none. */
function jsonStringAt(s: string): { value: string; end: number } | undefined {
  // eslint-disable-next-line no-control-regex -- a JSON string holds no raw control character
  const m = /^"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9A-Fa-f]{4}))*"/.exec(s);
  if (!m) return undefined;
  return { value: JSON.parse(m[0]) as string, end: m[0].length };
}

/** The subject at the start of `text`, for `context`, and where it ends. */
function parseSubject(text: string, context: AssertionContext): Parsed<{ subject: SubjectRef; end: number }> {
  const web = context === 'http' || context === 'api_step';
  const unknown = (): Parsed<{ subject: SubjectRef; end: number }> => {
    const seen = /^\S*/.exec(text)?.[0] ?? '';
    return fail(
      `${seen === '' ? 'the subject is missing' : `unknown subject "${seen.slice(0, 60)}"`}: ${CONTEXT_NAMES[context]} names ${SUBJECTS[context]}`,
    );
  };
  if (text.startsWith('$')) {
    if (!web) return unknown();
    const p = parsePath(text, 0);
    if (!p.ok) return p;
    const { path, length, end } = p.value;
    return { ok: true, value: { subject: { kind: 'json', path, length }, end } };
  }
  if (web && text.startsWith('header.')) {
    const name = HEADER_NAME.exec(text.slice(7))?.[0];
    if (name === undefined) return fail('header.<name> needs a header name (letters, digits, -)');
    return { ok: true, value: { subject: { kind: 'header', name: name.toLowerCase() }, end: 7 + name.length } };
  }
  const word = /^[A-Za-z_.]+/.exec(text)?.[0] ?? '';
  const simple: Record<string, SubjectRef | undefined> = {
    response_time: { kind: 'response_time' },
    ...(web ? { status: { kind: 'status' }, body: { kind: 'body' } } : {}),
    ...(context === 'tls' ? { 'tls.days_left': { kind: 'tls_days_left' } } : {}),
    ...(context === 'dns'
      ? {
          'dns.answers': { kind: 'dns_answers', length: false },
          'dns.answers.length': { kind: 'dns_answers', length: true },
        }
      : {}),
  };
  const subject = Object.hasOwn(simple, word) ? simple[word] : undefined;
  if (!subject) return unknown();
  return { ok: true, value: { subject, end: word.length } };
}

/** The operator at the start of `s` (after the subject's whitespace), and its length. */
function parseOperator(s: string): AssertionOperator | undefined {
  for (const op of ['==', '!=', '<=', '>=', '<', '>'] as const) if (s.startsWith(op)) return op;
  for (const op of ['!contains', 'contains', 'matches'] as const) {
    if (s.startsWith(op) && /^\s/.test(s.slice(op.length))) return op;
  }
  return undefined;
}

const OPERATOR_LIST = '==, !=, <, <=, >, >=, contains, !contains or matches';

/** Parses one assertion for `context`; a problem says what is wrong, in words. */
export function parseAssertion(text: string, context: AssertionContext): Parsed<Assertion> {
  const t = text.trim();
  if (t === '') return fail('is empty: write <subject> <operator> <value>, such as status == 200');
  if (t.length > MONITOR_LIMITS.maxAssertionLength) {
    return fail(`is longer than ${MONITOR_LIMITS.maxAssertionLength} characters`);
  }
  const s = parseSubject(t, context);
  if (!s.ok) return s;
  const { subject, end } = s.value;
  const afterSubject = t.slice(end);
  const rest = afterSubject.trimStart();
  const operator = parseOperator(rest);
  if (operator === undefined) {
    return fail(`after "${t.slice(0, end).slice(0, 60)}" comes an operator: ${OPERATOR_LIST}`);
  }
  if (/^[a-z!]/.test(operator) && afterSubject === rest) {
    return fail(`a space comes before ${operator}`);
  }
  const valueText = rest.slice(operator.length).trim();
  if (valueText === '') return fail(`${operator} needs a value: a JSON number, "string", true, false or null`);
  let value: AssertionLiteral;
  try {
    value = JSON.parse(valueText) as AssertionLiteral;
  } catch {
    return fail(
      `the value ${valueText.slice(0, 60)} is not a JSON literal: a number, "string" (in double quotes), true, false or null`,
    );
  }
  if (typeof value === 'object' && value !== null) {
    return fail('the value must be a number, "string", true, false or null (not an object or array)');
  }
  const problem = operandProblem(subject, operator, value);
  if (problem) return fail(problem);
  const base = { text: t, subject, operator, value };
  if (operator !== 'matches') return { ok: true, value: base };
  const re = compilePattern(value as string);
  if (!re.ok) return re;
  return { ok: true, value: re.value ? { ...base, regex: re.value } : base };
}

/** Whether `operator` and `value` make sense for the subject's type. */
function operandProblem(subject: SubjectRef, operator: AssertionOperator, value: AssertionLiteral): string | undefined {
  const type = subjectType(subject);
  const name = subjectName(subject);
  const ordering = operator === '<' || operator === '<=' || operator === '>' || operator === '>=';
  if (ordering && typeof value !== 'number') {
    return `${operator} compares numbers: ${JSON.stringify(value)} is not a number`;
  }
  if (type === 'number') {
    if (typeof value !== 'number') return `${name} is a number: compare it with a number, not ${JSON.stringify(value)}`;
    if (!ordering && operator !== '==' && operator !== '!=') return `${operator} does not apply to ${name} (a number)`;
  }
  if (type === 'list') {
    if (operator !== 'contains' && operator !== '!contains') {
      return `${name} is a list: use contains or !contains (or ${name}.length with a comparison)`;
    }
    if (typeof value !== 'string') return `${name} holds text: ${operator} takes a "string"`;
  }
  if (type === 'text') {
    if ((operator === 'contains' || operator === '!contains') && typeof value !== 'string') {
      return `${operator} on ${name} takes a "string"`;
    }
    if ((operator === '==' || operator === '!=') && typeof value !== 'string') {
      return `${name} is text: compare it with a "string"`;
    }
  }
  if (operator === 'matches' && typeof value !== 'string') return 'matches takes a "pattern" (a JSON string)';
  if (type === 'json' && (operator === 'contains' || operator === '!contains') && value === null) {
    return `${operator} takes a "string", a number or true/false`;
  }
  return undefined;
}

function subjectName(s: SubjectRef): string {
  switch (s.kind) {
    case 'header':
      return `header.${s.name}`;
    case 'tls_days_left':
      return 'tls.days_left';
    case 'dns_answers':
      return s.length ? 'dns.answers.length' : 'dns.answers';
    case 'json':
      return s.length ? 'the length' : 'the path';
    default:
      return s.kind;
  }
}

type V8 = { setFlagsFromString(flags: string): void };
let linearEngine: boolean | undefined;

/**
 * Whether this process has V8's linear-time regular-expression engine, turning it on the
 * first time (process-wide and idempotent, as @telemetry/contract/event-schema does): in
 * Node yes, in a browser no. NOTE: `process.getBuiltinModule` rather than an import keeps
 * this module free of Node's modules, for the console's bundle.
 */
function hasLinearEngine(): boolean {
  if (linearEngine !== undefined) return linearEngine;
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const v8 = proc?.getBuiltinModule?.('node:v8') as V8 | undefined;
  if (v8) v8.setFlagsFromString('--enable-experimental-regexp-engine');
  try {
    // eslint-disable-next-line no-invalid-regexp -- `l` (linear) exists once the flag is set
    new RegExp('', 'l');
    linearEngine = true;
  } catch {
    linearEngine = false;
  }
  return linearEngine;
}

/**
 * A `matches` pattern: a JavaScript regular expression without flags, compiled for V8's
 * linear-time engine (the `l` flag), whose time grows with the text and the pattern,
 * never exponentially. A pattern that engine cannot run (backreferences, lookahead, a
 * large counted repetition such as .{1000}; lookbehind too on Node 20's V8) is refused. Where there is no such engine (the console), only
 * its syntax is checked (the value is undefined): the API checks the rest.
 */
export function compilePattern(pattern: string): Parsed<RegExp | undefined> {
  try {
    new RegExp(pattern);
  } catch (err) {
    return fail(`the pattern is not a regular expression: ${(err as Error).message}`);
  }
  if (!hasLinearEngine()) return { ok: true, value: undefined };
  try {
    // eslint-disable-next-line no-invalid-regexp -- `l` (linear) exists once hasLinearEngine() said so
    return { ok: true, value: new RegExp(pattern, 'l') };
  } catch {
    return fail(
      'the pattern cannot run in linear time: backreferences, lookahead and large counted repetitions (and, before Node 22, lookbehind) are refused',
    );
  }
}

/** What a subject names in an answer, or why there is nothing to judge (a missing path, header or part; a body not JSON). */
type Seen = { value: unknown } | { missing: string };

const NOTHING: Seen = { missing: 'saw nothing' };

/** The parsed body, once per evaluation. */
class BodyJson {
  private parsed: Seen | undefined;
  constructor(private readonly subject: AssertionSubject) {}

  get(): Seen {
    if (this.parsed) return this.parsed;
    const { body, body_truncated: truncated } = this.subject;
    if (body === undefined) this.parsed = { missing: 'there is no body' };
    else {
      try {
        this.parsed = { value: JSON.parse(body) as unknown };
      } catch {
        this.parsed = {
          missing: truncated
            ? `the body is not JSON (only its first ${body.length} characters were read)`
            : 'the body is not JSON',
        };
      }
    }
    return this.parsed;
  }
}

/**
 * One parsed body per answer: a step's assertions and each of its extracts read the same
 * subject, so its body is parsed once (not once per extract: 10 extracts of a 1 MiB body).
 * A subject is not changed once read (each answer builds its own).
 */
const BODIES = new WeakMap<AssertionSubject, BodyJson>();

function bodyJsonOf(subject: AssertionSubject): BodyJson {
  let json = BODIES.get(subject);
  if (json === undefined) {
    json = new BodyJson(subject);
    BODIES.set(subject, json);
  }
  return json;
}

function walk(root: unknown, path: readonly PathStep[]): Seen {
  let at = root;
  for (const step of path) {
    if ('index' in step) {
      if (!Array.isArray(at)) return NOTHING;
      const i = step.index < 0 ? at.length + step.index : step.index;
      if (i < 0 || i >= at.length) return NOTHING;
      at = at[i] as unknown;
    } else {
      if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, step.key)) return NOTHING;
      at = (at as Record<string, unknown>)[step.key];
    }
  }
  return { value: at };
}

function lengthOf(seen: Seen): Seen {
  if ('missing' in seen) return seen;
  const v = seen.value;
  if (Array.isArray(v) || typeof v === 'string') return { value: v.length };
  if (v !== null && typeof v === 'object' && Object.hasOwn(v, 'length')) {
    return { value: (v as Record<string, unknown>).length };
  }
  return NOTHING;
}

function see(s: SubjectRef, subject: AssertionSubject, json: BodyJson): Seen {
  const known = (v: unknown): Seen => (v === undefined ? NOTHING : { value: v });
  switch (s.kind) {
    case 'status':
      return known(subject.status_code);
    case 'response_time':
      return known(subject.response_time);
    case 'body':
      return known(subject.body);
    case 'header':
      return known(subject.header?.(s.name));
    case 'tls_days_left':
      return known(subject.tls_days_left);
    case 'dns_answers':
      if (subject.dns_answers === undefined) return NOTHING;
      return { value: s.length ? subject.dns_answers.length : subject.dns_answers };
    case 'json': {
      const root = json.get();
      if ('missing' in root) return root;
      const at = walk(root.value, s.path);
      return s.length ? lengthOf(at) : at;
    }
  }
}

/** Whether `v` holds for `a` (a JSON value, the header or body text, a number, a list). */
function holds(a: Assertion, v: unknown): boolean {
  // Header and body text compares as a number when it is one; a JSON string never does.
  const text = a.subject.kind === 'header' || a.subject.kind === 'body';
  const want = a.value;
  switch (a.operator) {
    case '==':
      return v === want;
    case '!=':
      return v !== want;
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const n = typeof v === 'number' ? v : text && typeof v === 'string' && DECIMAL.test(v.trim()) ? Number(v) : NaN;
      if (Number.isNaN(n)) return false;
      const w = want as number;
      return a.operator === '<' ? n < w : a.operator === '<=' ? n <= w : a.operator === '>' ? n > w : n >= w;
    }
    case 'contains':
    case '!contains': {
      let has: boolean;
      if (typeof v === 'string') has = typeof want === 'string' && v.includes(want);
      else if (Array.isArray(v)) has = v.some((x) => x === want);
      else return false;
      return a.operator === 'contains' ? has : !has;
    }
    case 'matches':
      // NOTE: never a backtracking RegExp: without the linear engine the assertion fails.
      return typeof v === 'string' && a.regex !== undefined && a.regex.test(v);
  }
}

/** A header's text compared with <, >: a plain decimal number only. */
const DECIMAL = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * The first assertion of `list` that does not hold, as a check's `detail`
 * (`assertion $.status == "ok" failed: saw "degraded"`); undefined when all hold.
 * `mask` (an api_flow step's secrets out) runs over the whole detail before it is cut to
 * maxCheckDetailLength: a secret at the cut is masked, not half shown.
 */
export function failedAssertion(
  list: readonly Assertion[],
  subject: AssertionSubject,
  mask: (text: string) => string = (t) => t,
): string | undefined {
  const json = bodyJsonOf(subject);
  for (const a of list) {
    const seen = see(a.subject, subject, json);
    if ('missing' in seen) return detailOf(a, seen.missing, mask);
    if (!holds(a, seen.value)) {
      if (a.operator === 'matches' && a.regex === undefined) {
        return detailOf(a, 'the pattern has no linear-time engine here', mask);
      }
      return detailOf(a, `saw ${JSON.stringify(seen.value)}`, mask);
    }
  }
  return undefined;
}

/**
 * `assertion <text> failed: <why>`, masked by `mask`, then at most maxCheckDetailLength
 * characters (cut short with …).
 */
export function detailOf(a: Pick<Assertion, 'text'>, why: string, mask: (text: string) => string = (t) => t): string {
  return within('', mask(`assertion ${a.text} failed: ${why}`));
}

function within(head: string, why: string): string {
  const room = MONITOR_LIMITS.maxCheckDetailLength - head.length;
  if (why.length <= room) return head + why;
  let cut = why.slice(0, Math.max(0, room - 1));
  // Never half a surrogate pair.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${head}${cut}…`;
}

/** Where an api_flow step's extract reads a value: `$.path` in the JSON body, or `header.<name>`. */
export interface ValueSource {
  readonly text: string;
  readonly subject: Extract<SubjectRef, { kind: 'json' } | { kind: 'header' }>;
}

export function parseValueSource(text: string): Parsed<ValueSource> {
  const t = text.trim();
  if (!t.startsWith('$') && !t.startsWith('header.')) {
    return fail('an extract reads $.path (in the JSON body) or header.<name>');
  }
  if (t.length > MONITOR_LIMITS.maxAssertionLength) {
    return fail(`is longer than ${MONITOR_LIMITS.maxAssertionLength} characters`);
  }
  const s = parseSubject(t, 'api_step');
  if (!s.ok) return s;
  if (s.value.end !== t.length) return fail(`unexpected "${t.slice(s.value.end, s.value.end + 20)}" after the source`);
  const subject = s.value.subject;
  if (subject.kind !== 'json' && subject.kind !== 'header') {
    return fail('an extract reads $.path (in the JSON body) or header.<name>');
  }
  return { ok: true, value: { text: t, subject } };
}

/** The value `src` reads from an answer, as text (JSON text for a non-string); undefined when absent. */
export function readSource(src: ValueSource, subject: AssertionSubject): string | undefined {
  const seen = see(src.subject, subject, bodyJsonOf(subject));
  if ('missing' in seen || seen.value === undefined) return undefined;
  return typeof seen.value === 'string' ? seen.value : JSON.stringify(seen.value);
}

/** Problems of assertions at `path` (`/assertions`, `/api_steps/0/assertions`): each `<path>/<i>`. */
export function assertionProblems(list: readonly string[], path: string, context: AssertionContext): Problem[] {
  return list.flatMap((text, i) => {
    const p = parseAssertion(text, context);
    return p.ok ? [] : [{ path: `${path}/${i}`, message: p.problem }];
  });
}

/**
 * The assertions of `list` parsed, for a runner; a problem is the check's `detail` (an
 * assertion stored before a rule of this language changed no longer parses: the check
 * fails rather than skip it).
 */
export function parseAssertions(list: readonly string[], context: AssertionContext): Parsed<Assertion[]> {
  const out: Assertion[] = [];
  for (const text of list) {
    const p = parseAssertion(text, context);
    if (!p.ok) return fail(within(`assertion ${text.trim()} cannot be parsed: `, p.problem));
    out.push(p.value);
  }
  return { ok: true, value: out };
}
