import {
  describeErrors,
  type MonitorCreate,
  type MonitorSettings,
  type Problem,
  type Validators,
} from '@telemetry/contract';
import { AppError, type EgressPolicy, type Logger } from '@telemetry/platform';
import {
  createSettings,
  deniedTargets,
  monitorProblems,
  publicMonitor,
  type MonitorChange,
  type MonitorWithNonce,
} from '@telemetry/store';
import { invalid } from './registry-objects.js';

/**
 * The rules a monitor's settings must meet, wherever they come from: POST and PATCH
 * /api/monitors (monitors.route.ts) and a configuration document's monitors
 * (config-as-code/monitors.ts) call these same functions.
 */

/** Where registry changes are announced to the check runners. */
export interface ChangeNotifier {
  notify(change: MonitorChange): Promise<void>;
}

export interface MonitorRules {
  validators: Validators;
  policy: EgressPolicy;
  /** Shortest interval a monitor may be given (MIN_INTERVAL_SECONDS). */
  minIntervalSeconds: number;
  /** HEARTBEAT_KEY: makes heartbeat monitors' tokens ('': heartbeat monitors are refused). */
  heartbeatKey: string;
}

/**
 * Why settings are refused: VALIDATION_FAILED with its problems, or TARGET_NOT_ALLOWED
 * (a URL the egress policy denies, judged only once nothing else is wrong).
 */
export interface MonitorRefusal {
  code: 'VALIDATION_FAILED' | 'TARGET_NOT_ALLOWED';
  problems: Problem[];
}

/** Which of the rules that an older monitor may not meet apply (all of them on create). */
export interface SettingsChecks {
  /** MIN_INTERVAL_SECONDS: it may have risen since a monitor was made. */
  interval: boolean;
  /** Heartbeat monitors need HEARTBEAT_KEY: the server may have lost it since. */
  type: boolean;
}

/** The problems of `settings` (undefined: none): the same on create, PATCH and in a configuration document. */
export function settingsRefusal(
  rules: MonitorRules,
  settings: MonitorSettings,
  checks: SettingsChecks = { interval: true, type: true },
): MonitorRefusal | undefined {
  const problems: Problem[] = [];
  if (checks.interval && settings.interval_seconds < rules.minIntervalSeconds) {
    problems.push({
      path: '/interval_seconds',
      message: `must be at least ${rules.minIntervalSeconds} (MIN_INTERVAL_SECONDS)`,
    });
  }
  problems.push(...monitorProblems(settings));
  // Without HEARTBEAT_KEY the jobs of heartbeat monitors would have nothing to call.
  if (checks.type && settings.type === 'heartbeat' && rules.heartbeatKey === '') {
    problems.push({ path: '/type', message: 'heartbeat monitors need HEARTBEAT_KEY, which this server does not have' });
  }
  if (problems.length > 0) return { code: 'VALIDATION_FAILED', problems };
  const denied = deniedTargets(settings, rules.policy);
  return denied.length > 0 ? { code: 'TARGET_NOT_ALLOWED', problems: denied } : undefined;
}

/** A create body (POST /api/monitors, a document's monitor) and the settings of a monitor `id` it makes. */
export interface CheckedCreate {
  create: MonitorCreate;
  settings: MonitorSettings;
}

/**
 * `body` checked as a monitor's create body (its schema, then its settings' rules) for the
 * monitor `id`. `stored`: the monitor it describes again (a configuration document's item
 * of an existing monitor), which, as with PATCH, keeps an interval and a type allowed when
 * they were set.
 */
export function checkCreate(
  rules: MonitorRules,
  body: unknown,
  id: string,
  stored?: Pick<MonitorSettings, 'interval_seconds' | 'type'>,
): CheckedCreate | MonitorRefusal {
  if (!rules.validators.monitorCreate(body)) {
    return { code: 'VALIDATION_FAILED', problems: describeErrors(rules.validators.monitorCreate.errors) };
  }
  const settings = createSettings(body, id);
  const checks = {
    interval: stored === undefined || stored.interval_seconds !== settings.interval_seconds,
    type: stored === undefined || stored.type !== settings.type,
  };
  return settingsRefusal(rules, settings, checks) ?? { create: body, settings };
}

export function isRefusal(v: object): v is MonitorRefusal {
  return 'problems' in v;
}

/** The API's error for a refusal: 400 VALIDATION_FAILED or TARGET_NOT_ALLOWED. */
export function refusalError(r: MonitorRefusal): AppError {
  if (r.code === 'VALIDATION_FAILED') return invalid('monitor', r.problems);
  const first = r.problems[0]!;
  return new AppError('TARGET_NOT_ALLOWED', `${first.path}: ${first.message}`, { problems: r.problems });
}

/**
 * A refusal as the problems of one item of a configuration document (one 400
 * VALIDATION_FAILED for the whole document): a denied target says so.
 */
export function refusalProblems(r: MonitorRefusal): Problem[] {
  if (r.code === 'VALIDATION_FAILED') return r.problems;
  return r.problems.map((p) => ({ path: p.path, message: `the egress policy does not allow it: ${p.message}` }));
}

/**
 * A monitor as the audit log shows it: as the API answers it (secrets masked), without
 * its webhook secret or heartbeat token and without its status (not a setting).
 */
export function audited(m: MonitorWithNonce): Record<string, unknown> {
  const { heartbeat_nonce: _nonce, ...stored } = m;
  const { status: _s, last_check_at: _l, ...shown } = publicMonitor(stored);
  return shown;
}

/** Tells the check runners a monitor changed; a notice that is not sent is logged, not thrown. */
export async function announce(
  notifier: ChangeNotifier,
  logger: Logger,
  requestId: unknown,
  change: MonitorChange,
): Promise<void> {
  try {
    await notifier.notify(change);
  } catch (err) {
    // The change is stored; runners also follow the registry's change feed, so they
    // pick it up within a second even when this notice is lost.
    logger.warn('monitor change notice not sent', { request_id: requestId, id: change.id, err: String(err) });
  }
}
