import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { MonitorSettings } from '@telemetry/contract';
import { resolverAddress } from '@telemetry/store';
import { deadline } from '@telemetry/platform';
import type { ProbeContext } from './types.js';
import { asserted } from './assert.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

/**
 * A dns monitor's check (docs/monitors.md, "Monitor types"): asks the monitor's resolver
 * (or the runner's own) for `dns_record_type` of the name in `dns://name`, once, within
 * `timeout_ms`. Up when there is an answer holding every `dns_expected` value. A resolver
 * the egress policy denies is not asked. Through the runner's own resolver, an answer that
 * holds an address the policy denies is reported exactly as a name that does not exist
 * (`dns`, timed the same way), whatever was expected: a monitor cannot tell an internal
 * name from a missing one, so it cannot map the runner's private network. Never throws.
 */
export async function dnsProbe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  const name = new URL(m.url).hostname;
  const type = m.dns_record_type ?? 'A';
  const resolver = new Resolver({ timeout: m.timeout_ms, tries: 1 });
  if (m.dns_resolver === null && ctx.dnsServers) resolver.setServers([...ctx.dnsServers]);
  if (m.dns_resolver !== null) {
    const at = resolverAddress(m.dns_resolver);
    if (!at || !ctx.policy.check(at.address, at.port).allowed) return failed('target_not_allowed', 0);
    resolver.setServers([at.address.includes(':') ? `[${at.address}]:${at.port}` : `${at.address}:${at.port}`]);
  }
  // c-ares asks each server of the list in turn: the monitor's timeout bounds them all.
  const bound = deadline(m.timeout_ms, ctx.signal, () => resolver.cancel());
  const elapsed = stopwatch();
  try {
    const answers = normalise(type, (await resolver.resolve(name, type)) as unknown[]);
    const t = elapsed();
    // Through the runner's own resolver, private answers stay private: no answer (see above).
    const own = m.dns_resolver === null;
    const denied = own && answers.some((a) => isIP(a) !== 0 && !ctx.policy.check(a, 0).allowed);
    if (answers.length === 0 || denied) return failed('dns', t);
    const missing = m.dns_expected.some((v) => !answers.includes(comparable(type, v)));
    if (missing) return failed('unexpected_answer', t);
    return asserted(m, 'dns', passed(m, t), { dns_answers: answers });
  } catch (err) {
    const code = String((err as { code?: string }).code ?? '');
    if (bound.timedOut() || code === 'ETIMEOUT') return failed('timeout', elapsed());
    return failed(code === 'ECONNREFUSED' ? 'connection_refused' : 'dns', elapsed());
  } finally {
    bound.clear();
  }
}

/** Each record as one comparable string: MX by its exchange, TXT's strings joined. */
function normalise(type: string, records: unknown[]): string[] {
  return records.map((r) => {
    if (Array.isArray(r)) return comparable(type, r.join(''));
    if (typeof r === 'string') return comparable(type, r);
    return comparable(type, String((r as { exchange?: string }).exchange ?? ''));
  });
}

/**
 * What two values are compared as: TXT exactly as it is, an address in its canonical form
 * (2001:db8:0::1 is 2001:db8::1), a name without case or final dot.
 */
function comparable(type: string, v: string): string {
  if (type === 'TXT') return v;
  if (isIP(v) === 6) return new URL(`http://[${v}]`).hostname.slice(1, -1);
  return v.toLowerCase().replace(/\.$/, '');
}
