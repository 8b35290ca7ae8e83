import { toIsoSeconds } from '@telemetry/contract';
import type { ClickHouseReader } from '@telemetry/platform';
import { lastAlertsSql, lastChecksSql, type MonitorActivity, type TableLayout } from '@telemetry/store';

/**
 * What the checks and alerts of these monitors of `tenantId` say (their last alert and
 * newest check): the source of a monitor's `status` and `last_check_at`.
 */
export async function monitorActivity(
  reader: ClickHouseReader,
  database: string,
  layout: TableLayout,
  tenantId: string,
  ids: readonly string[],
  signal: AbortSignal,
): Promise<Map<string, MonitorActivity>> {
  const out = new Map<string, MonitorActivity>(ids.map((id) => [id, {}]));
  if (ids.length === 0) return out;
  const [alerts, checks] = await Promise.all([
    reader.query<{ monitor_id: string; t: string }>(lastAlertsSql(database, layout, ids, tenantId), signal),
    reader.query<{ monitor_id: string; t: number | string }>(lastChecksSql(database, layout, tenantId, ids), signal),
  ]);
  for (const r of alerts.data) out.get(r.monitor_id)!.lastAlert = r.t;
  for (const r of checks.data) out.get(r.monitor_id)!.lastCheckAt = toIsoSeconds(Number(r.t));
  return out;
}
