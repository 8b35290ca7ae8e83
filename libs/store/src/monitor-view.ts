import type { Monitor, MonitorSettings, MonitorStatus } from '@telemetry/contract';
import { settingsOf } from '@telemetry/contract';
import { maskHeaders, maskUrl, maskVariables, maskWebhooks } from './monitor-secrets.js';
import type { StoredMonitor } from './monitor-rows.js';

/** The API's view of a stored monitor: its status, and its secrets masked. */

/** What a monitor's checks and alerts say of it (see monitorStatus). */
export interface MonitorActivity {
  /** Type of its last alert, if any. */
  lastAlert?: string;
  /** Its newest check, ISO seconds, if any. */
  lastCheckAt?: string;
}

/** paused; down while an incident is open; up once checked; pending before the first check. */
export function monitorStatus(m: Pick<MonitorSettings, 'paused'>, a: MonitorActivity): MonitorStatus {
  if (m.paused) return 'paused';
  if (a.lastAlert === 'monitor.down') return 'down';
  return a.lastCheckAt ? 'up' : 'pending';
}

/** The secrets' shown forms (monitor-secrets.ts): what answers and the table's `spec` hold. */
export function shownSecrets(m: Pick<MonitorSettings, 'url' | 'headers' | 'webhooks' | 'variables'>) {
  return {
    url: maskUrl(m.url),
    headers: maskHeaders(m.headers),
    webhooks: maskWebhooks(m.webhooks),
    variables: maskVariables(m.variables),
  };
}

/**
 * What the API returns: header values, variable values, the URL's userinfo and query values masked,
 * webhooks as scheme and host (monitor-secrets.ts), never the webhook secret unless
 * `withSecret` (the response that set it).
 */
export function publicMonitor(m: StoredMonitor, activity: MonitorActivity = {}, withSecret = false): Monitor {
  return {
    id: m.id,
    key: m.key,
    ...settingsOf(m),
    ...shownSecrets(m),
    ...(withSecret ? { webhook_secret: m.webhook_secret } : {}),
    status: monitorStatus(m, activity),
    last_check_at: activity.lastCheckAt ?? null,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}
