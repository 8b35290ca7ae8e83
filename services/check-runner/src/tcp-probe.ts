import { connect } from 'node:net';
import type { CheckError, MonitorSettings } from '@telemetry/contract';
import { portOf } from '@telemetry/platform';
import { classify, StreamSearch } from './http-client.js';
import type { ProbeContext, ProbeResult } from './probe.js';

/**
 * A tcp monitor's check (docs/monitors.md, "Monitor types"): connect to host:port through
 * the egress policy; then, if the monitor says so, send `tcp_send` and read the reply until
 * it contains `tcp_expect` (at most the runner's body limit, within the timeout). The
 * response time is the time to connect, or to the expected reply. Never throws.
 */
export function tcpProbe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  const url = new URL(m.url);
  const port = portOf(url);
  const started = performance.now();
  const elapsed = (): number => Math.round((performance.now() - started) * 100) / 100;
  // An IP literal never reaches a lookup: judge it here, before anything is sent.
  const literal = ctx.policy.checkLiteral(url);
  if (literal && !literal.allowed) return Promise.resolve(down('target_not_allowed', 0));
  return new Promise((resolve) => {
    let timedOut = false;
    let done = false;
    const search = m.tcp_expect !== null ? new StreamSearch(m.tcp_expect) : undefined;
    let read = 0;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const socket = connect({ host, port, lookup: ctx.policy.pinnedLookup(port) });
    const finish = (r: ProbeResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(r);
    };
    const verdict = (): ProbeResult => {
      const t = elapsed();
      const slow = m.degraded_threshold_ms !== null && t > m.degraded_threshold_ms;
      return { status: slow ? 'degraded' : 'up', status_code: 0, response_time: t };
    };
    const timer = setTimeout(() => {
      timedOut = true;
      finish(down('timeout', elapsed()));
    }, m.timeout_ms);
    const onAbort = (): void => finish(down('network', elapsed()));
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => {
      if (m.tcp_send !== null) socket.write(m.tcp_send);
      if (!search) finish(verdict());
    });
    socket.on('data', (chunk: Buffer) => {
      if (!search) return;
      search.push(chunk);
      read += chunk.length;
      if (search.found) finish(verdict());
      else if (read >= ctx.maxBodyBytes) finish(down('unexpected_reply', elapsed()));
    });
    // The other side closed before the reply held what was expected.
    socket.once('end', () => finish(down('unexpected_reply', elapsed())));
    socket.once('error', (err) => {
      const kind = classify(err, timedOut);
      finish(down(kind, kind === 'target_not_allowed' ? 0 : elapsed()));
    });
  });
}

function down(error: CheckError, responseTime: number): ProbeResult {
  return { status: 'down', status_code: 0, response_time: responseTime, error };
}
