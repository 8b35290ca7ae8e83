import { Resolver } from 'node:dns/promises';
import type { CheckError, MonitorSettings } from '@telemetry/contract';
import { resolverAddress } from '@telemetry/store';
import type { ProbeContext, ProbeResult } from './probe.js';

/**
 * A dns monitor's check (docs/monitors.md, "Monitor types"): asks the monitor's resolver
 * (or the runner's own) for `dns_record_type` of the name in `dns://name`, once, within
 * `timeout_ms`. Up when there is an answer holding every `dns_expected` value (names
 * compared without case or a final dot). A resolver the egress policy denies is not asked.
 * Never throws.
 */
export async function dnsProbe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  const name = new URL(m.url).hostname;
  const resolver = new Resolver({ timeout: m.timeout_ms, tries: 1 });
  if (m.dns_resolver !== null) {
    const at = resolverAddress(m.dns_resolver);
    if (!at || !ctx.policy.check(at.address, at.port).allowed) return down('target_not_allowed', 0);
    resolver.setServers([at.address.includes(':') ? `[${at.address}]:${at.port}` : `${at.address}:${at.port}`]);
  }
  const onAbort = (): void => resolver.cancel();
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  const started = performance.now();
  const elapsed = (): number => Math.round((performance.now() - started) * 100) / 100;
  try {
    const answers = normalise((await resolver.resolve(name, m.dns_record_type ?? 'A')) as unknown[]);
    const t = elapsed();
    if (answers.length === 0) return down('dns', t);
    const missing = m.dns_expected.some((v) => !answers.includes(canonical(v)));
    if (missing) return down('unexpected_answer', t);
    const slow = m.degraded_threshold_ms !== null && t > m.degraded_threshold_ms;
    return { status: slow ? 'degraded' : 'up', status_code: 0, response_time: t };
  } catch (err) {
    const code = String((err as { code?: string }).code ?? '');
    return down(code === 'ETIMEOUT' ? 'timeout' : code === 'ECONNREFUSED' ? 'connection_refused' : 'dns', elapsed());
  } finally {
    ctx.signal?.removeEventListener('abort', onAbort);
  }
}

/** Each record as one comparable string: addresses and names as they are, MX by exchange, TXT joined. */
function normalise(records: unknown[]): string[] {
  return records.map((r) => {
    if (typeof r === 'string') return canonical(r);
    if (Array.isArray(r)) return r.join('');
    return canonical(String((r as { exchange?: string }).exchange ?? ''));
  });
}

/** Names compare without case and without a final dot. */
function canonical(v: string): string {
  return v.toLowerCase().replace(/\.$/, '');
}

function down(error: CheckError, responseTime: number): ProbeResult {
  return { status: 'down', status_code: 0, response_time: responseTime, error };
}
