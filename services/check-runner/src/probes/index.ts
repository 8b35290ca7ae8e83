import { parsesAsUrl } from '@telemetry/contract';
import type { StoredMonitor } from '@telemetry/store';
import { apiFlowProbe } from './api-flow.js';
import type { BrowserPool } from '../browser-pool.js';
import { browserProbeWith } from './browser.js';
import { dnsProbe } from './dns.js';
import { heartbeatProbeWith, type HeartbeatDeps } from './heartbeat.js';
import { httpProbe } from './http.js';
import { icmpProbe } from './icmp.js';
import { missingPinger, type Pinger } from './ping.js';
import { socketProbe } from './socket.js';
import type { ProbeContext, ProbeMap, SlotResult } from './types.js';
import { failed } from './verdict.js';

export type { Probe, ProbeContext, ProbeMap, SlotResult } from './types.js';
export type { ProbeResult } from './verdict.js';
export { findPing, missingPinger, systemPinger, type Pinger } from './ping.js';
export type { BrowserProbeResult } from './browser.js';

/**
 * The runner's probes, one per monitor type (docs/monitors.md, "Monitor types"). A new
 * type adds its module under probes/ and one line here; the compiler refuses the map
 * without it (ProbeMap). `pinger` sends the icmp checks' echo requests (the system ping the
 * runner found at start; none: icmp checks fail with `network`); `browser`: the runner's
 * Chromium (none: RUNNER_CHROMIUM_PATH unset).
 */
export function probeMap(
  heartbeat: HeartbeatDeps,
  pinger: Pinger = missingPinger('ping'),
  browser?: BrowserPool,
): ProbeMap {
  return {
    http: httpProbe,
    tcp: socketProbe,
    tls: socketProbe,
    dns: dnsProbe,
    heartbeat: heartbeatProbeWith(heartbeat),
    api_flow: apiFlowProbe,
    browser: browserProbeWith(browser),
    icmp: icmpProbe(pinger),
  };
}

/** Runs one check of `m` with its type's probe: never throws; a failure is a `down` result with its `error`. */
export function probeWith(probes: ProbeMap): (m: StoredMonitor, ctx: ProbeContext) => Promise<SlotResult> {
  return (m, ctx) => {
    // A host no resolver could be asked for (a monitor stored before the API refused it): as
    // unresolvable. (A heartbeat monitor's URL is the server's heartbeat://<id>: it parses.)
    if (!parsesAsUrl(m.url)) return Promise.resolve(failed('dns', 0));
    return probes[m.type](m, ctx);
  };
}
