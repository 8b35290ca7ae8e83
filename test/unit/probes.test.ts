import { expect } from 'chai';
import { MONITOR_TYPES } from '@telemetry/contract';
import { probeMap, type Probe, type ProbeMap } from '../../services/check-runner/src/probes/index.js';

const heartbeat = { lastCall: () => Promise.resolve(undefined), settleMs: 0, now: () => Date.now() };
const any: Probe = () => Promise.resolve({ status: 'up', status_code: 0, response_time: 0 });

describe('probe map (unit)', () => {
  it('has exactly one probe per value of the schema type enum (MONITOR_TYPES)', () => {
    const probes = probeMap(heartbeat);
    expect(Object.keys(probes).sort()).to.deep.equal([...MONITOR_TYPES].sort());
    for (const t of MONITOR_TYPES) expect(probes[t], t).to.be.a('function');
  });

  it('does not compile without a probe for every type (tsc -b type-checks this file)', () => {
    // NOTE: the checks here are the compiler's; each line below is an error `tsc -b` requires.
    // @ts-expect-error Property 'heartbeat' is missing: a type without a probe.
    const missing: ProbeMap = { http: any, tcp: any, tls: any, dns: any };
    // @ts-expect-error Object literal may only specify known properties: a probe for no type.
    const extra: ProbeMap = { http: any, tcp: any, tls: any, dns: any, heartbeat: any, no_such_type: any };
    // ProbeMap is keyed by MonitorType: a value added to MONITOR_TYPES is a missing key in probeMap.
    expect([missing, extra]).to.have.length(2);
  });
});
