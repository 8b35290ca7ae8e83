import {
  ASSERTION_LIMITS,
  failedAssertion,
  MONITOR_LIMITS,
  parseAssertions,
  parseValueSource,
  readSource,
  resolveStepUrl,
  stepLabel,
  stepPrefix,
  substitute,
  type ApiStep,
  type AssertionSubject,
  type CheckError,
  type CheckTimings,
  type MonitorSettings,
} from '@telemetry/contract';
import { httpCall, HttpCallError, RESEND_BODY, type HttpAnswer } from '@telemetry/platform';
import { assertionsReadBody } from './assert.js';
import { headerValue, requestHeaders, statusExpected } from './http.js';
import { redact } from './redact.js';
import type { ProbeContext } from './types.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

export { redact } from './redact.js';

/**
 * An api_flow monitor's check (docs/api-flows.md): its steps in order, each one request
 * through the same egress-bound client as an http check (httpCall: every connection and
 * redirect judged by the policy), within one deadline, the monitor's timeout_ms. A step
 * fails on its status, then its assertions, then a value it cannot extract; the check is
 * the first failing step's, or the last step's. Never throws.
 *
 * NOTE: the values of variables (sealed secrets, and what steps extract) go into requests
 * only: no detail, error or log line holds one (see redact).
 */

/** What went wrong in a step: the check's error and the words after `step <n> "<name>": `. */
interface StepFailure {
  error: CheckError;
  words: string;
}

/** One step's outcome: its answer's status (0: none), and its failure if it failed. */
interface StepOutcome {
  statusCode: number;
  failure?: StepFailure;
}

type Steps = NonNullable<CheckTimings['steps']>;

/** What an HTTP field value may hold (the schema's rule for header values): no CR, LF or NUL. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Runs an api_flow monitor's steps in order (docs/api-flows.md): one deadline, each step's status, assertions and extracts. */
export async function apiFlowProbe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  const elapsed = stopwatch();
  const deadline = performance.now() + m.timeout_ms;
  // NOTE: a Map, not an object: `__proto__` is a valid variable name.
  const values = new Map(Object.entries(m.variables));
  const secrets = new Set(values.values());
  const steps: Steps = [];
  let statusCode = 0;
  // A row stored before the API required steps: nothing was checked, so nothing passed.
  if (m.api_steps.length === 0) return failed('step_failed', 0, { detail: 'the flow has no steps' });
  for (const [i, step] of m.api_steps.entries()) {
    const took = stopwatch();
    const outcome = await runStep(m, step, values, deadline, ctx);
    statusCode = outcome.statusCode;
    steps.push({
      name: stepLabel(step, i),
      duration_ms: took(),
      ok: outcome.failure === undefined,
      ...(outcome.statusCode > 0 ? { status_code: outcome.statusCode } : {}),
    });
    if (outcome.failure) {
      for (const v of values.values()) secrets.add(v);
      const detail = `${stepPrefix(step, i)}: ${redact(outcome.failure.words, secrets)}`;
      return failed(outcome.failure.error, elapsed(), {
        status_code: statusCode,
        detail: clip(detail),
        timings: { steps },
      });
    }
  }
  return passed(m, elapsed(), { status_code: statusCode, timings: { steps } });
}

/** One step: its request with the values filled in, then its status, assertions and extracts. */
async function runStep(
  m: MonitorSettings,
  step: ApiStep,
  values: Map<string, string>,
  deadline: number,
  ctx: ProbeContext,
): Promise<StepOutcome> {
  const fail = (error: CheckError, words: string, statusCode = 0): StepOutcome => ({
    statusCode,
    failure: { error, words },
  });
  const request = fillRequest(m.url, step, values);
  if ('failure' in request) return { statusCode: 0, failure: request.failure };
  // One deadline for the whole flow: a step gets what the steps before it left.
  const left = Math.floor(deadline - performance.now());
  if (left <= 0) return fail('timeout', `not started: the flow's timeout_ms (${m.timeout_ms} ms) ran out`);
  const method = step.method ?? 'GET';
  // The body is kept only for assertions and extracts that read it, and no more of it than they may judge.
  const needsBody =
    assertionsReadBody(step.assertions ?? []) ||
    Object.values(step.extract ?? {}).some((x) => x.trim().startsWith('$'));
  const keepBytes = needsBody && method !== 'HEAD' ? Math.min(ctx.maxBodyBytes, ASSERTION_LIMITS.maxBodyBytes) : 0;
  const took = stopwatch();
  let answer: HttpAnswer;
  try {
    answer = await httpCall({
      url: request.url,
      method,
      headers: requestHeaders(ctx, request.headers, request.body !== null),
      body: request.body,
      timeoutMs: left,
      maxRedirects: m.follow_redirects ? 5 : 0,
      maxBodyBytes: method === 'HEAD' ? 1 : ctx.maxBodyBytes,
      keepBytes,
      signal: ctx.signal,
      policy: ctx.policy,
      // A step's header values may hold secrets (filled from variables): they stay with its origin.
      secretHeaders: Object.keys(step.headers ?? {}),
    });
  } catch (err) {
    const kind = err instanceof HttpCallError ? err.kind : 'network';
    // The body stays with its origin (docs/api-flows.md): say so, without the URL.
    if (err instanceof HttpCallError && err.message.startsWith(RESEND_BODY)) return fail(kind, RESEND_BODY);
    return fail(kind, callFailure(kind, m.timeout_ms));
  }
  const responseTime = took();
  const code = answer.statusCode;
  const rules = step.expected_status_codes ?? ['2xx'];
  if (!statusExpected(code, rules))
    return fail('unexpected_status', `status ${code}, expected ${rules.join(', ')}`, code);
  const truncated = answer.truncated || (keepBytes > 0 && answer.body.length >= keepBytes);
  const subject: AssertionSubject = {
    status_code: code,
    response_time: responseTime,
    header: (name) => headerValue(answer, name),
    ...(keepBytes > 0 ? { body: answer.body.toString('utf8'), body_truncated: truncated } : {}),
  };
  // A row stored before a rule the API now enforces does not parse: the step cannot pass.
  const assertions = parseAssertions(step.assertions ?? [], 'api_step');
  // Masked before the detail is cut to length: a value at the cut is not half shown.
  const mask = (text: string) => redact(text, values.values());
  const failedOne = assertions.ok ? failedAssertion(assertions.value, subject, mask) : assertions.problem;
  if (failedOne !== undefined) return fail('assertion_failed', failedOne, code);
  // Extracted after every check passed, and only then visible to the next steps.
  const extracted: [string, string][] = [];
  for (const [name, text] of Object.entries(step.extract ?? {})) {
    const source = parseValueSource(text);
    const value = source.ok ? readSource(source.value, subject) : undefined;
    if (value === undefined) {
      const cut = truncated ? ` (only its first ${keepBytes} bytes were read)` : '';
      return fail('step_failed', `extract ${name}: ${text} is not in the answer${cut}`, code);
    }
    extracted.push([name, value]);
  }
  for (const [name, value] of extracted) values.set(name, value);
  return { statusCode: code };
}

/**
 * A step's URL, headers and body with the variables' values filled in: URL parts
 * percent-encoded, headers and body as they are. A name without a value (a row stored
 * before the API refused that) or a value a header cannot hold fails the step.
 */
export function fillRequest(
  base: string,
  step: ApiStep,
  values: ReadonlyMap<string, string>,
): { url: string; headers: Record<string, string>; body: string | null } | { failure: StepFailure } {
  const unset = (names: string[], where: string) => ({
    failure: { error: 'step_failed' as const, words: `${where} uses {{${names[0]!}}}, which has no value` },
  });
  const resolved = resolveStepUrl(base, step.url, values);
  if (resolved.missing.length > 0) return unset(resolved.missing, 'its URL');
  if (!resolved.url) return { failure: { error: 'step_failed', words: 'its URL does not parse once filled in' } };
  const headers: [string, string][] = [];
  for (const [name, raw] of Object.entries(step.headers ?? {})) {
    const filled = substitute(raw, values);
    if (filled.missing.length > 0) return unset(filled.missing, `header ${name}`);
    if (!HEADER_VALUE.test(filled.text)) {
      return { failure: { error: 'step_failed', words: `header ${name}: a value filled in is not valid in a header` } };
    }
    headers.push([name, filled.text]);
  }
  const method = step.method ?? 'GET';
  let body: string | null = null;
  if (step.body !== undefined && step.body !== null && method !== 'GET' && method !== 'HEAD') {
    const filled = substitute(step.body, values);
    if (filled.missing.length > 0) return unset(filled.missing, 'its body');
    body = filled.text;
  }
  return { url: resolved.url.href, headers: Object.fromEntries(headers), body };
}

/** What a request that got no answer says: the check error, in words. */
function callFailure(kind: CheckError, timeoutMs: number): string {
  switch (kind) {
    case 'timeout':
      return `no answer within the flow's timeout_ms (${timeoutMs} ms)`;
    case 'target_not_allowed':
      return 'the egress policy refused its address';
    case 'insecure_redirect':
      return 'a redirect from https to http is not followed';
    default:
      // NOTE: never the error's message: it may name the URL, and a URL may hold a value.
      return kind;
  }
}

function clip(detail: string): string {
  const max = MONITOR_LIMITS.maxCheckDetailLength;
  return detail.length <= max ? detail : `${detail.slice(0, max - 1)}…`;
}
