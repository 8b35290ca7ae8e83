import type { MonitorType } from '@telemetry/contract';
import type { EgressPolicy } from '@telemetry/platform';
import type { StoredMonitor } from '@telemetry/store';
import type { HeartbeatFinding } from './heartbeat.js';
import type { ProbeResult } from './verdict.js';

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

/**
 * What a probe makes of a slot: a check of its own (the runner publishes it), or what a
 * type whose checks arrive by themselves found (heartbeat: see HeartbeatFinding).
 */
export type SlotResult = ProbeResult | HeartbeatFinding;

/** Runs one check of a monitor of its type: never throws; a failure is a `down` result with its `error`. */
export type Probe = (m: StoredMonitor, ctx: ProbeContext) => Promise<SlotResult>;

/**
 * One probe per monitor type. NOTE: a mapped type over MonitorType, so a type added to
 * MONITOR_TYPES without a probe here does not compile (test/unit/probes.test.ts).
 */
export type ProbeMap = { readonly [T in MonitorType]: Probe };
