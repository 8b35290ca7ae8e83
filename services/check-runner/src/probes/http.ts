import {
  ASSERTION_LIMITS,
  isForbiddenMonitorHeader,
  type MonitorSettings,
  type StatusCodeRule,
} from '@telemetry/contract';
import { httpCall, HttpCallError, type HttpAnswer } from '@telemetry/platform';
import { asserted, assertionsReadBody } from './assert.js';
import type { ProbeContext } from './types.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

/** Does `code` match one of the rules (200, "2xx")? */
export function statusExpected(code: number, rules: readonly StatusCodeRule[]): boolean {
  return rules.some((r) => (typeof r === 'number' ? r === code : Math.floor(code / 100) === Number(r[0])));
}

/**
 * The verdict on an answer (pure; see docs/api.md "Check statuses"): the expected status
 * and the keyword first, then the monitor's assertions (docs/assertions.md).
 */
export function judge(m: MonitorSettings, answer: HttpAnswer, responseTime: number, keptBytes = 0): ProbeResult {
  const base = { status_code: answer.statusCode, response_time: responseTime };
  if (!statusExpected(answer.statusCode, m.expected_status_codes)) {
    return { ...base, status: 'down', error: 'unexpected_status' };
  }
  if (m.keyword !== null && answer.keywordFound !== true) {
    return { ...base, status: 'down', error: answer.truncated ? 'body_too_large' : 'keyword_missing' };
  }
  return asserted(m, 'http', passed(m, responseTime, { status_code: answer.statusCode }), {
    status_code: answer.statusCode,
    header: (name) => headerValue(answer, name),
    ...(keptBytes > 0
      ? { body: answer.body.toString('utf8'), body_truncated: answer.truncated || answer.body.length >= keptBytes }
      : {}),
  });
}

/** A header of the answer by name (any case); several of one name joined with ", ". */
export function headerValue(answer: HttpAnswer, name: string): string | undefined {
  const v = answer.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}

/** An http monitor's check (docs/monitors.md, "Monitor types"). Never throws. */
export async function httpProbe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  const elapsed = stopwatch();
  // The body is kept only for assertions that read it, and no more of it than they may judge.
  const keepBytes =
    m.method !== 'HEAD' && assertionsReadBody(m.assertions)
      ? Math.min(ctx.maxBodyBytes, ASSERTION_LIMITS.maxBodyBytes)
      : 0;
  try {
    const answer = await httpCall({
      url: m.url,
      method: m.method,
      headers: requestHeaders(ctx, m.headers, m.body !== null),
      body: m.body,
      timeoutMs: m.timeout_ms,
      maxRedirects: m.follow_redirects ? 5 : 0,
      maxBodyBytes: m.method === 'HEAD' ? 1 : ctx.maxBodyBytes,
      // Searched as the body streams: no check holds its response in memory.
      keyword: m.keyword,
      keepBytes,
      signal: ctx.signal,
      policy: ctx.policy,
      // Every header value of a monitor is a secret (docs/api.md, "Secrets").
      secretHeaders: Object.keys(m.headers),
    });
    return judge(m, answer, elapsed(), keepBytes);
  } catch (err) {
    return failed(err instanceof HttpCallError ? err.kind : 'network', elapsed());
  }
}

/**
 * The headers of a check's request (an http check's, an api_flow step's): who asks and for
 * which check, JSON for a body, then the monitor's (or step's) own, without those only
 * the connection may set (older rows may hold them).
 */
export function requestHeaders(
  ctx: Pick<ProbeContext, 'userAgent' | 'monitorId' | 'checkId'>,
  own: Record<string, string>,
  hasBody: boolean,
): Record<string, string> {
  return {
    'User-Agent': ctx.userAgent,
    'X-Monitor-Id': ctx.monitorId,
    'X-Check-Id': ctx.checkId,
    ...(hasBody ? { 'Content-Type': 'application/json' } : {}),
    ...Object.fromEntries(Object.entries(own).filter(([k]) => !isForbiddenMonitorHeader(k))),
  };
}
