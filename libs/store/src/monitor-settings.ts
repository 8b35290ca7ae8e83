import { randomBytes } from 'node:crypto';
import type { StoredMonitor } from './monitor-rows.js';
import type { MonitorCreate, MonitorPatch, MonitorSettings, Problem } from '@telemetry/contract';
import {
  DEFAULT_TENANT,
  monitorTypeModule,
  parsesAsUrl,
  retype,
  settingsOf,
  settled,
  toIsoSeconds,
  typeDefaults,
  typeProblems,
} from '@telemetry/contract';
import { connectUrl, type EgressPolicy, type EgressVerdict } from '@telemetry/platform';

/**
 * The rules of a monitor's settings, over every type: what a create and a change make of
 * a request, and what is refused. What belongs to one type is in its module
 * (libs/contract/src/monitor-types); the defaults are the schema's.
 */

export { heartbeatUrl, resolverAddress, settingsOf } from '@telemetry/contract';

/** An http monitor's settings, but for its name and URL: the schema's defaults. */
export const DEFAULT_MONITOR: Omit<MonitorSettings, 'name' | 'url'> = typeDefaults('http');

/** A new monitor id: `mon_` and 16 hex digits. */
export function newMonitorId(): string {
  return `mon_${randomBytes(8).toString('hex')}`;
}

/** A webhook signing secret: `whsec_` and 32 hex digits. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(16).toString('hex')}`;
}

/** The rules JSON Schema cannot state, over the merged settings. */
export function monitorProblems(s: MonitorSettings): Problem[] {
  const problems: Problem[] = [];
  if (s.timeout_ms > s.interval_seconds * 1000) {
    problems.push({ path: '/timeout_ms', message: 'must not be longer than interval_seconds' });
  }
  if (s.confirm_delay_ms > 0 && s.confirm_delay_ms + 2 * s.timeout_ms > s.interval_seconds * 1000) {
    problems.push({
      path: '/confirm_delay_ms',
      message: 'with two timeouts (the check and its confirmation) must fit in interval_seconds',
    });
  }
  if (s.degraded_threshold_ms !== null && s.degraded_threshold_ms >= s.timeout_ms) {
    problems.push({ path: '/degraded_threshold_ms', message: 'must be shorter than timeout_ms' });
  }
  s.webhooks.forEach((w, i) => {
    if (!parsesAsUrl(w)) problems.push({ path: `/webhooks/${i}`, message: 'is not a URL this server can parse' });
  });
  s.maintenance_windows.forEach((w, i) => {
    if ('from' in w) {
      if (!(Date.parse(w.to) > Date.parse(w.from)))
        problems.push({ path: `/maintenance_windows/${i}/to`, message: 'must be after from' });
    } else if (!knownTimeZone(w.time_zone)) {
      problems.push({ path: `/maintenance_windows/${i}/time_zone`, message: 'is not a time zone this server knows' });
    }
  });
  if (s.quorum !== null && s.quorum > s.locations.length) {
    problems.push({ path: '/quorum', message: 'must not be more than the locations listed' });
  }
  return [...problems, ...typeProblems(s)];
}

/** Failing locations that open an incident: `quorum`, or a majority of `locations`. */
export function quorumOf(s: Pick<MonitorSettings, 'locations' | 'quorum'>): number {
  return s.quorum ?? Math.floor(s.locations.length / 2) + 1;
}

/** An IANA time zone name that Intl knows here (Europe/Berlin, UTC). */
export function knownTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/**
 * The monitor's targets (its type module's) and webhook URLs that are IP literals the
 * policy denies (names are judged when a check connects): JSON pointers and why.
 */
export function deniedTargets(s: MonitorSettings, policy: EgressPolicy): Problem[] {
  const problems: Problem[] = [];
  const deny = (path: string, verdict: EgressVerdict | undefined): void => {
    if (verdict && !verdict.allowed) problems.push({ path, message: verdict.reason });
  };
  const judgeUrl = (path: string, raw: string): void => {
    // One that does not parse is a validation problem (monitorProblems), not a target.
    if (parsesAsUrl(raw)) deny(path, policy.checkUrl(connectUrl(new URL(raw))));
  };
  for (const t of monitorTypeModule(s.type).targets(s)) {
    if ('url' in t) judgeUrl(t.path, t.url);
    else deny(t.path, policy.check(t.address, t.port));
  }
  s.webhooks.forEach((w, i) => judgeUrl(`/webhooks/${i}`, w));
  return problems;
}

/** Settings of a new monitor: the request's, defaults (the schema's, then its type's) for the rest. */
export function createSettings(body: MonitorCreate, id: string): MonitorSettings {
  const { webhook_secret: _secret, ...given } = body;
  const s = settingsOf({ url: '', ...typeDefaults(given.type ?? 'http'), ...given });
  return fitTimeout(settled(s, id), given.timeout_ms);
}

/** Settings after a PATCH: the request's fields replace the stored ones. */
export function patchSettings(current: MonitorSettings & { id: string }, patch: MonitorPatch): MonitorSettings {
  const { webhook_secret: _secret, ...given } = patch;
  // Another type: the old type's fields go back to their defaults, the new one's get theirs,
  // unless the request sets them.
  const base = given.type !== undefined && given.type !== current.type ? retype(current, given.type) : current;
  // A stored timeout may have been chosen: a shorter interval does not change it (400).
  const serverUrl = given.type !== undefined && monitorTypeModule(given.type).serverScheme !== undefined;
  const url = serverUrl && given.url === undefined ? '' : (given.url ?? base.url);
  return settled(settingsOf({ ...base, ...given, url }), current.id);
}

/**
 * On create, a timeout the request did not set shrinks to fit a shorter interval (a 5 s
 * monitor gets a 5 s timeout, not the default 10 s); one it did set is checked as given.
 */
function fitTimeout(s: MonitorSettings, given: number | undefined): MonitorSettings {
  if (given !== undefined || s.timeout_ms <= s.interval_seconds * 1000) return s;
  return { ...s, timeout_ms: s.interval_seconds * 1000 };
}

/**
 * A paused monitor with this id, checking nothing: registers an id whose check history
 * is written by other means (demo data, benchmarks, tests).
 */
export function placeholderMonitor(
  id: string,
  name = id,
  tenantId: string = DEFAULT_TENANT,
): Omit<StoredMonitor, 'version'> {
  const now = toIsoSeconds(Math.floor(Date.now() / 1000));
  return {
    tenant_id: tenantId,
    id,
    key: null,
    ...typeDefaults('http'),
    name,
    url: 'http://127.0.0.1:9/',
    paused: true,
    webhook_secret: newWebhookSecret(),
    created_at: now,
    updated_at: now,
  };
}
