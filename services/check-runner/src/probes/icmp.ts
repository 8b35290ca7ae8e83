import {
  DEFAULT_ICMP_COUNT,
  ICMP_INTERVAL_MS,
  ICMP_MIN_WAIT_MS,
  icmpHost,
  type CheckTimings,
} from '@telemetry/contract';
import type { MonitorSettings } from '@telemetry/contract';
import type { EgressPolicy } from '@telemetry/platform';
import type { Pinger } from './ping.js';
import type { ProbeContext } from './types.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

/** Where a host is pinged: the address, or why there is none to ping. */
type Destination = { address: string; family: 4 | 6 } | { error: 'dns' | 'target_not_allowed' };

/**
 * The address an icmp check pings: the URL's IP literal, or the first address its name
 * resolves to (the runner's resolver, as every check's) that the egress policy allows.
 * ICMP has no port: the policy judges the address alone (port 0, its ranges).
 */
function destination(m: MonitorSettings, policy: EgressPolicy): Promise<Destination> {
  const host = icmpHost(new URL(m.url));
  if (!host) return Promise.resolve({ error: 'dns' });
  const lookup = policy.pinnedLookup(0);
  return new Promise((resolve) => {
    lookup('literal' in host ? host.literal : host.name, {}, (err, address, family) => {
      if (err) resolve({ error: err.code === 'EGRESS_DENIED' ? 'target_not_allowed' : 'dns' });
      else resolve({ address: address as string, family: family === 6 ? 6 : 4 });
    });
  });
}

/**
 * An icmp monitor's check (docs/monitors.md, "icmp"): resolves and judges the address
 * first (a denied one gets no packet: `target_not_allowed`), then sends icmp_count echo
 * requests ICMP_INTERVAL_MS apart within timeout_ms. Up when every one came back, with the
 * average round trip as its response time (degraded above degraded_threshold_ms);
 * degraded when some were lost; down with `packet_loss` when none came back, `timeout`
 * when the timeout stopped it first, `network` when no request could be sent. Never throws.
 */
export function icmpProbe(pinger: Pinger) {
  return async (m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> => {
    const elapsed = stopwatch();
    const count = m.icmp_count ?? DEFAULT_ICMP_COUNT;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), m.timeout_ms);
    const onAbort = (): void => abort.abort();
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const to = await destination(m, ctx.policy);
      if ('error' in to) return failed(to.error, elapsed());
      if (abort.signal.aborted) return failed('timeout', elapsed());
      // The last reply is waited for with what is left of the timeout (ping exits before it).
      const left = m.timeout_ms - elapsed() - (count - 1) * ICMP_INTERVAL_MS;
      const out = await pinger.ping({
        address: to.address,
        family: to.family,
        count,
        waitMs: Math.max(ICMP_MIN_WAIT_MS / 5, left - 100),
        intervalMs: ICMP_INTERVAL_MS,
        signal: abort.signal,
      });
      const t = elapsed();
      if (!out.ok) return failed(out.aborted ? 'timeout' : 'network', t, { detail: out.reason });
      const packets = packetTimings(out);
      const timings: CheckTimings = { packets };
      if (out.aborted)
        return failed('timeout', t, { timings, detail: `${packets.received} of ${count} replies before the timeout` });
      if (out.received === 0)
        return failed('packet_loss', t, { timings, detail: `no reply to ${out.sent} echo requests` });
      const rtt = packets.rtt_avg_ms ?? t;
      if (out.received < out.sent) {
        const lost = out.sent - out.received;
        return {
          ...passed(m, rtt, { timings }),
          status: 'degraded',
          detail: `${lost} of ${out.sent} packets lost (${packets.loss_percent}%)`,
        };
      }
      return passed(m, rtt, { timings });
    } finally {
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onAbort);
    }
  };
}

function packetTimings(s: { sent: number; received: number; rttMinMs?: number; rttAvgMs?: number; rttMaxMs?: number }) {
  const packets: NonNullable<CheckTimings['packets']> = {
    sent: s.sent,
    received: s.received,
    loss_percent: s.sent === 0 ? 100 : Math.round(((s.sent - s.received) / s.sent) * 10_000) / 100,
  };
  if (s.received > 0 && s.rttAvgMs !== undefined) {
    packets.rtt_min_ms = s.rttMinMs ?? s.rttAvgMs;
    packets.rtt_avg_ms = s.rttAvgMs;
    packets.rtt_max_ms = s.rttMaxMs ?? s.rttAvgMs;
  }
  return packets;
}
