import type { Problem } from './validators.js';

/**
 * The assertion language of docs/assertions.md: `<subject> <operator> <value>`, such as
 * `status == 200`, `response_time < 500`, `header.content-type contains "json"`,
 * `$.data.items.length > 0`, `$.status == "ok"`, `body matches "^ok"`,
 * `tls.days_left >= 14`, `dns.answers contains "192.0.2.1"`. Parsed once when a monitor
 * is stored (problems), and again by the runner (a parsed form is cheap to keep).
 *
 * NOTE(issue 45 foundation): this file fixes the interface the runner's probes, the
 * api_flow type and the console use; its implementation is the assertions slice's.
 */

/** Which answers an assertion is judged on: the subjects it may name differ. */
export type AssertionContext = 'http' | 'tls' | 'dns' | 'api_step';

/** A parsed assertion. */
export interface Assertion {
  /** As written (trimmed): what a failure's `detail` names. */
  readonly text: string;
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
  tls_days_left?: number;
  dns_answers?: readonly string[];
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Parses one assertion for `context`; a problem says what is wrong, in words. */
export function parseAssertion(text: string, context: AssertionContext): Parsed<Assertion> {
  void context;
  return { ok: true, value: { text: text.trim() } };
}

/**
 * The first assertion of `list` that does not hold, as a check's `detail`
 * (`assertion $.status == "ok" failed: saw "degraded"`); undefined when all hold.
 */
export function failedAssertion(list: readonly Assertion[], subject: AssertionSubject): string | undefined {
  void list;
  void subject;
  return undefined;
}

/** Where an api_flow step's extract reads a value: `$.path` in the JSON body, or `header.<name>`. */
export interface ValueSource {
  readonly text: string;
}

export function parseValueSource(text: string): Parsed<ValueSource> {
  return { ok: true, value: { text: text.trim() } };
}

/** The value `src` reads from an answer, as text (JSON text for a non-string); undefined when absent. */
export function readSource(src: ValueSource, subject: AssertionSubject): string | undefined {
  void src;
  void subject;
  return undefined;
}

/** Problems of assertions at `path` (`/assertions`, `/api_steps/0/assertions`): each `<path>/<i>`. */
export function assertionProblems(list: readonly string[], path: string, context: AssertionContext): Problem[] {
  return list.flatMap((text, i) => {
    const p = parseAssertion(text, context);
    return p.ok ? [] : [{ path: `${path}/${i}`, message: p.problem }];
  });
}
