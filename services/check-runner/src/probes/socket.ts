import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { DEFAULT_TLS_MIN_DAYS, type MonitorSettings } from '@telemetry/contract';
import { connectUrl, portOf, unbracket } from '@telemetry/platform';
import { classify, StreamSearch } from '@telemetry/platform';
import type { ProbeContext } from './types.js';
import { asserted } from './assert.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

const DAY_MS = 86_400_000;

/**
 * A tcp or tls monitor's check (docs/monitors.md, "Monitor types"). Both connect to
 * host:port through the egress policy (a name is resolved once and its address judged and
 * pinned; an IP literal and a denied port are judged before anything is sent), within `timeout_ms`.
 * - tcp: then, if the monitor says so, sends `tcp_send` and reads the reply until it holds
 *   `tcp_expect` (at most the runner's body limit). The response time is the time to
 *   connect, or to the expected reply.
 * - tls: completes a handshake, verifies the chain and the host name (`tls` when they fail,
 *   `certificate_expiring` when it has expired) and reads how many days the certificate
 *   has left: fewer than `tls_min_days` is `certificate_expiring` too.
 *   The response time is the time to the end of the handshake.
 * Never throws.
 */
export function socketProbe(m: MonitorSettings, ctx: ProbeContext): Promise<ProbeResult> {
  // tcp:// and tls:// hosts parsed as http ones are: 127.1 is the literal 127.0.0.1.
  const url = connectUrl(new URL(m.url));
  const port = portOf(url);
  const elapsed = stopwatch();
  const literal = ctx.policy.checkUrl(url);
  if (literal && !literal.allowed) return Promise.resolve(failed('target_not_allowed', 0));
  const host = unbracket(url.hostname);
  const lookup = ctx.policy.pinnedLookup(port);
  return new Promise((resolve) => {
    let timedOut = false;
    let done = false;
    const search = m.type === 'tcp' && m.tcp_expect !== null ? new StreamSearch(m.tcp_expect) : undefined;
    let read = 0;
    const socket: Socket =
      m.type === 'tls'
        ? tlsConnect({ host, port, lookup, servername: isIP(host) ? undefined : host, rejectUnauthorized: false })
        : netConnect({ host, port, lookup });
    const finish = (r: ProbeResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      ctx.signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      finish(failed('timeout', elapsed()));
    }, m.timeout_ms);
    const onAbort = (): void => finish(failed('network', elapsed()));
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    if (m.type === 'tls') {
      socket.once('secureConnect', () => {
        // Verified here rather than by rejectUnauthorized, so that a check of a bad or
        // expired certificate still says how many days it has (had) left. Nothing is sent.
        const tlsSocket = socket as TLSSocket;
        const days = Math.floor((Date.parse(tlsSocket.getPeerCertificate().valid_to) - Date.now()) / DAY_MS);
        const known = Number.isFinite(days) ? { tls_days_left: days } : {};
        if (!tlsSocket.authorized) {
          const expired = String(tlsSocket.authorizationError) === 'CERT_HAS_EXPIRED';
          return finish(failed(expired ? 'certificate_expiring' : 'tls', elapsed(), known));
        }
        finish(
          !(days >= (m.tls_min_days ?? DEFAULT_TLS_MIN_DAYS))
            ? failed('certificate_expiring', elapsed(), known)
            : asserted(m, 'tls', passed(m, elapsed(), known), known),
        );
      });
    } else {
      socket.once('connect', () => {
        if (m.tcp_send !== null) socket.write(m.tcp_send);
        if (!search) finish(passed(m, elapsed()));
      });
      socket.on('data', (chunk: Buffer) => {
        if (!search) return;
        search.push(chunk);
        read += chunk.length;
        if (search.found) finish(passed(m, elapsed()));
        else if (read >= ctx.maxBodyBytes) finish(failed('unexpected_reply', elapsed()));
      });
      // The other side closed before the reply held what was expected.
      socket.once('end', () => finish(failed('unexpected_reply', elapsed())));
    }
    socket.once('error', (err) => {
      finish(failed(classify(err, timedOut), elapsed()));
    });
  });
}
