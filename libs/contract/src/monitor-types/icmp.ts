import { DEFAULT_ICMP_COUNT } from '../limits.js';
import { ipVersion } from '../urls.js';
import { plainUrlProblems, type MonitorTypeModule } from './module.js';

/** Milliseconds between an icmp check's echo requests (iputils lets anyone go down to 2 ms; older ones 200). */
export const ICMP_INTERVAL_MS = 200;
/** The least time an icmp check waits for a reply after its last echo request. */
export const ICMP_MIN_WAIT_MS = 500;

/**
 * The host of an icmp:// URL as the runner pings it: an IP literal (without brackets) when
 * it is one, parsed as an http URL's host is (`127.1` and `2130706433` are `127.0.0.1`),
 * else the name, to be resolved when the check runs; undefined when it is no host at all.
 */
export function icmpHost(url: URL): { literal: string } | { name: string } | undefined {
  if (url.hostname === '') return undefined;
  let host: string;
  try {
    host = new URL(`http://${url.hostname}/`).hostname;
  } catch {
    return undefined;
  }
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return ipVersion(bare) !== 0 ? { literal: bare } : { name: bare };
}

/** The least timeout_ms that fits `count` echo requests ICMP_INTERVAL_MS apart and a wait for the last reply. */
export function icmpMinTimeoutMs(count: number): number {
  return (count - 1) * ICMP_INTERVAL_MS + ICMP_MIN_WAIT_MS;
}

/**
 * ICMP echo (ping): round-trip time and loss over icmp_count packets (docs/monitors.md,
 * "icmp"). ICMP has no port: the egress policy judges the address alone (port 0: its
 * ranges; an EGRESS_ALLOW `host:port` pair allows no ping).
 */
export const icmpType: MonitorTypeModule<'icmp'> = {
  type: 'icmp',
  label: 'Ping (ICMP)',
  urlForm: 'an icmp monitor pings icmp://host (an IP address or a name), with nothing else',
  urlHint: 'icmp://host',
  fields: ['icmp_count'],
  defaults: { icmp_count: DEFAULT_ICMP_COUNT },
  problems(s, url) {
    const problems = plainUrlProblems(url, 'icmp', 'none', this.urlForm);
    if (url && problems.length === 0 && icmpHost(url) === undefined)
      problems.push({ path: '/url', message: this.urlForm });
    const count = s.icmp_count ?? DEFAULT_ICMP_COUNT;
    if (s.timeout_ms < icmpMinTimeoutMs(count)) {
      problems.push({
        path: '/icmp_count',
        message: `${count} packets ${ICMP_INTERVAL_MS} ms apart need a timeout_ms of at least ${icmpMinTimeoutMs(count)}`,
      });
    }
    return problems;
  },
  // An IP literal is judged now; a name when the check resolves it (the runner judges the address it pings).
  targets(s) {
    let url: URL;
    try {
      url = new URL(s.url);
    } catch {
      return [];
    }
    const host = url.protocol === 'icmp:' ? icmpHost(url) : undefined;
    return host && 'literal' in host ? [{ path: '/url', address: host.literal, port: 0 }] : [];
  },
};
