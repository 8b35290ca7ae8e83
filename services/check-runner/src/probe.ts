import { createHash } from 'node:crypto';
import {
  DEFAULT_LOCATION,
  isForbiddenMonitorHeader,
  parsesAsUrl,
  type CheckMessage,
  type MonitorSettings,
  type StatusCodeRule,
} from '@telemetry/contract';
import { httpCall, HttpCallError, type HttpAnswer } from './http-client.js';
import { socketProbe } from './socket-probe.js';
import { dnsProbe } from './dns-probe.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';
import type { EgressPolicy } from '@telemetry/platform';

export type { ProbeResult } from './verdict.js';

/** Does `code` match one of the rules (200, "2xx")? */
export function statusExpected(code: number, rules: readonly StatusCodeRule[]): boolean {
  return rules.some((r) => (typeof r === 'number' ? r === code : Math.floor(code / 100) === Number(r[0])));
}

/** The verdict on an answer (pure; see docs/api.md "Check statuses"). */
export function judge(m: MonitorSettings, answer: HttpAnswer, responseTime: number): ProbeResult {
  const base = { status_code: answer.statusCode, response_time: responseTime };
  if (!statusExpected(answer.statusCode, m.expected_status_codes)) {
    return { ...base, status: 'down', error: 'unexpected_status' };
  }
  if (m.keyword !== null && answer.keywordFound !== true) {
    return { ...base, status: 'down', error: answer.truncated ? 'body_too_large' : 'keyword_missing' };
  }
  return passed(m, responseTime, { status_code: answer.statusCode });
}

export interface ProbeContext {
  userAgent: string;
  checkId: string;
  monitorId: string;
  maxBodyBytes: number;
  signal?: AbortSignal;
  /** The egress policy every connection of the check is judged by. */
  policy: EgressPolicy;
  /** The servers of the runner's own resolver for dns checks (undefined: the system's). */
  dnsServers?: readonly string[];
}

/** Runs one check of `m`: never throws; a failure is a `down` result with its `error`. */
export async function probe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  // A host no resolver could be asked for (a monitor stored before the API refused it): as unresolvable.
  if (!parsesAsUrl(m.url)) return failed('dns', 0);
  if (m.type === 'dns') return dnsProbe(m, ctx);
  if (m.type !== 'http') return socketProbe(m, ctx);
  const elapsed = stopwatch();
  try {
    const answer = await httpCall({
      url: m.url,
      method: m.method,
      headers: {
        'User-Agent': ctx.userAgent,
        'X-Monitor-Id': ctx.monitorId,
        'X-Check-Id': ctx.checkId,
        ...(m.body !== null ? { 'Content-Type': 'application/json' } : {}),
        ...monitorHeaders(m.headers),
      },
      body: m.body,
      timeoutMs: m.timeout_ms,
      maxRedirects: m.follow_redirects ? 5 : 0,
      maxBodyBytes: m.method === 'HEAD' ? 1 : ctx.maxBodyBytes,
      // Searched as the body streams: no check holds its response in memory.
      keyword: m.keyword,
      signal: ctx.signal,
      policy: ctx.policy,
      // Every header value of a monitor is a secret (docs/api.md, "Secrets").
      secretHeaders: Object.keys(m.headers),
    });
    return judge(m, answer, elapsed());
  } catch (err) {
    return failed(err instanceof HttpCallError ? err.kind : 'network', elapsed());
  }
}

/** The monitor's headers without those only the connection may set (older rows may hold them). */
function monitorHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !isForbiddenMonitorHeader(k)));
}

/**
 * The id of the check of `monitorId` in the slot starting at `slotStartMs` from
 * `location`: the same on every runner of the location, so a check run twice (a
 * handover) is stored once.
 */
export function checkIdFor(monitorId: string, slotStartMs: number, location = DEFAULT_LOCATION): string {
  // Each location checks the slot: its id is its own (the default location's as before locations).
  const text =
    location === DEFAULT_LOCATION ? `${monitorId}\n${slotStartMs}` : `${monitorId}\n${slotStartMs}\n${location}`;
  return `chk_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
}

export function checkMessage(
  monitor: { id: string; tenant_id: string },
  id: string,
  startedAt: Date,
  r: ProbeResult,
  location: string,
): CheckMessage {
  return {
    id,
    monitor_id: monitor.id,
    tenant_id: monitor.tenant_id,
    status: r.status,
    response_time: r.response_time,
    status_code: r.status_code,
    ...(r.error ? { error: r.error } : {}),
    location,
    ...(r.tls_days_left !== undefined ? { tls_days_left: r.tls_days_left } : {}),
    created_at: startedAt.toISOString(),
  };
}
