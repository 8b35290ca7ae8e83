import {
  failedAssertion,
  parseAssertions,
  type AssertionContext,
  type AssertionSubject,
  type MonitorSettings,
} from '@telemetry/contract';
import type { ProbeResult } from './verdict.js';

/**
 * A passing result judged again on the monitor's assertions (docs/assertions.md): the
 * first that does not hold makes it `down` with error `assertion_failed` and a `detail`
 * naming the assertion and the value seen. A result already failing is left as it is:
 * the type's own checks (expected status, keyword, days left, expected answers) come first.
 */
export function asserted(
  m: Pick<MonitorSettings, 'assertions'>,
  context: AssertionContext,
  r: ProbeResult,
  subject: AssertionSubject,
): ProbeResult {
  if (r.status === 'down' || m.assertions.length === 0) return r;
  const list = parseAssertions(m.assertions, context);
  const detail = list.ok ? failedAssertion(list.value, { response_time: r.response_time, ...subject }) : list.problem;
  return detail === undefined ? r : { ...r, status: 'down', error: 'assertion_failed', detail };
}

/** Whether an http monitor's assertions read the body (a JSON path or `body`): only then is it kept. */
export function assertionsReadBody(assertions: readonly string[]): boolean {
  return assertions.some((a) => /^\s*(?:\$|body\b)/.test(a));
}
