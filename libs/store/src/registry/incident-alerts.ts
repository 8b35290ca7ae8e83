import type { StateAlert } from '@telemetry/contract';
import { inTransaction, type PgPool } from '@telemetry/platform';
import type { PolicyStep } from './escalation-policies.js';
import { registryCall } from './pg.js';

/**
 * Where each incident's notifications stand (docs/alerting.md, "Escalation"), in
 * PostgreSQL's `incident_alerts` table: the steps it escalates through (its policy as it
 * was when the incident opened), the last step notified and when, the reminders sent per
 * channel, who acknowledged it, and when it resolved. The check runner's alert dispatcher
 * opens a row on a down alert and resolves it on the up; its escalation clock claims due
 * rows under a lease (so two runners never notify the same step) and finishes them once
 * what was due is delivered or given up; a runner that dies leaves its lease to expire and
 * another runner sends again (at least once: each notification's id is stable, so
 * providers with idempotency keys see it once). The query service acknowledges.
 */

/** One channel's reminders of an incident: how many went, the last when (ms). */
export interface ReminderState {
  sent: number;
  last_at: number;
}

export interface IncidentAlertState {
  incident_id: string;
  tenant_id: string;
  monitor_id: string;
  /** ms since the epoch, as every time here. */
  opened_at: number;
  /** The down alert that opened it: what reminders and later steps say. */
  alert: StateAlert;
  steps: PolicyStep[];
  /** The last step notified (0: the first). */
  step: number;
  step_at: number;
  reminders: Record<string, ReminderState>;
  next_due_at: number | null;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
  resolved_at: number | null;
}

interface Row {
  incident_id: string;
  tenant_id: string;
  monitor_id: string;
  opened_at: Date;
  alert: StateAlert;
  steps: PolicyStep[];
  step: number;
  step_at: Date;
  reminders: Record<string, ReminderState>;
  next_due_at: Date | null;
  acknowledged_at: Date | null;
  acknowledged_by: string | null;
  resolved_at: Date | null;
}

const ms = (d: Date | null): number | null => (d === null ? null : d.getTime());

function decode(r: Row): IncidentAlertState {
  return {
    incident_id: r.incident_id,
    tenant_id: r.tenant_id,
    monitor_id: r.monitor_id,
    opened_at: r.opened_at.getTime(),
    alert: r.alert,
    steps: r.steps,
    step: r.step,
    step_at: r.step_at.getTime(),
    reminders: r.reminders,
    next_due_at: ms(r.next_due_at),
    acknowledged_at: ms(r.acknowledged_at),
    acknowledged_by: r.acknowledged_by,
    resolved_at: ms(r.resolved_at),
  };
}

const COLUMNS = `incident_id, tenant_id, monitor_id, opened_at, alert, steps, step, step_at, reminders, next_due_at,
  acknowledged_at, acknowledged_by, resolved_at`;
const ts = (t: number | null): Date | null => (t === null ? null : new Date(t));

/** What the escalation clock writes back once a claimed row's due notifications are done. */
export type IncidentProgress = Pick<IncidentAlertState, 'step' | 'step_at' | 'reminders' | 'next_due_at'>;

export class IncidentAlertStore {
  constructor(private readonly db: PgPool) {}

  /**
   * Opens the incident's row unless it exists (a down alert read twice): the row as
   * stored, and whether this call made it (only then is its first step notified).
   */
  async open(
    s: Pick<
      IncidentAlertState,
      'incident_id' | 'tenant_id' | 'monitor_id' | 'opened_at' | 'alert' | 'steps' | 'next_due_at'
    >,
  ): Promise<{ state: IncidentAlertState; created: boolean }> {
    return registryCall(async () => {
      const { rows } = await this.db.query<Row>(
        `INSERT INTO incident_alerts (incident_id, tenant_id, monitor_id, opened_at, alert, steps, step, step_at, next_due_at)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, 0, $4, $7)
         ON CONFLICT (incident_id) DO NOTHING RETURNING ${COLUMNS}`,
        [
          s.incident_id,
          s.tenant_id,
          s.monitor_id,
          ts(s.opened_at),
          JSON.stringify(s.alert),
          JSON.stringify(s.steps),
          ts(s.next_due_at),
        ],
      );
      if (rows[0]) return { state: decode(rows[0]), created: true };
      const state = await this.get(s.incident_id);
      if (!state) throw new Error(`incident ${s.incident_id} neither inserted nor found`);
      return { state, created: false };
    });
  }

  async get(incidentId: string): Promise<IncidentAlertState | undefined> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(`SELECT ${COLUMNS} FROM incident_alerts WHERE incident_id = $1`, [incidentId]),
    );
    return rows[0] ? decode(rows[0]) : undefined;
  }

  /** The rows of `tenantId`'s incidents among `ids`, by incident id. */
  async ofIncidents(tenantId: string, ids: readonly string[]): Promise<Map<string, IncidentAlertState>> {
    if (ids.length === 0) return new Map();
    const { rows } = await registryCall(() =>
      this.db.query<Row>(
        `SELECT ${COLUMNS} FROM incident_alerts WHERE tenant_id = $1 AND incident_id = ANY($2::text[])`,
        [tenantId, ids],
      ),
    );
    return new Map(rows.map((r) => [r.incident_id, decode(r)]));
  }

  /** Marks it resolved at `at` (nothing more is due); the row as it was before, undefined when there is none. */
  async resolve(incidentId: string, at: number): Promise<IncidentAlertState | undefined> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(
        `UPDATE incident_alerts SET resolved_at = coalesce(resolved_at, $2), next_due_at = NULL
         WHERE incident_id = $1 RETURNING ${COLUMNS}`,
        [incidentId, ts(at)],
      ),
    );
    return rows[0] ? decode(rows[0]) : undefined;
  }

  /**
   * Acknowledges (or, with `by` null, takes back the acknowledgement of) `tenantId`'s open
   * incident, and runs `then` with the new row before the change commits (the caller
   * publishes the acknowledgement there: a failure there changes nothing). Taking it back
   * restarts the escalation clock at `at`. An incident already in the state asked for is
   * left as it is (`changed` false, `then` not run): a second acknowledgement neither
   * replaces the first one's who and when nor is published again, and taking back one
   * that nobody made does not restart escalation. Undefined: no such open incident.
   */
  async acknowledge(
    tenantId: string,
    incidentId: string,
    by: string | null,
    at: number,
    then: (s: IncidentAlertState) => Promise<void>,
  ): Promise<{ state: IncidentAlertState; changed: boolean } | undefined> {
    return registryCall(() =>
      inTransaction(this.db, async (tx) => {
        const { rows } = await tx.query<Row>(
          by === null
            ? `UPDATE incident_alerts SET acknowledged_at = NULL, acknowledged_by = NULL, step_at = $3, next_due_at = $3
               WHERE tenant_id = $1 AND incident_id = $2 AND resolved_at IS NULL AND acknowledged_at IS NOT NULL
               RETURNING ${COLUMNS}`
            : `UPDATE incident_alerts SET acknowledged_at = $3, acknowledged_by = $4
               WHERE tenant_id = $1 AND incident_id = $2 AND resolved_at IS NULL AND acknowledged_at IS NULL
               RETURNING ${COLUMNS}`,
          by === null ? [tenantId, incidentId, ts(at)] : [tenantId, incidentId, ts(at), by],
        );
        if (rows[0]) {
          const state = decode(rows[0]);
          await then(state);
          return { state, changed: true };
        }
        const { rows: open } = await tx.query<Row>(
          `SELECT ${COLUMNS} FROM incident_alerts WHERE tenant_id = $1 AND incident_id = $2 AND resolved_at IS NULL`,
          [tenantId, incidentId],
        );
        return open[0] ? { state: decode(open[0]), changed: false } : undefined;
      }),
    );
  }

  /**
   * Claims up to `limit` rows with something due by `now` and no live lease (another
   * runner's), for `leaseMs`: each is this runner's until it finishes or the lease ends.
   * Rows of `working` (this runner's, still being sent) are never claimed again.
   */
  async claimDue(
    owner: string,
    now: number,
    leaseMs: number,
    limit: number,
    working: readonly string[] = [],
  ): Promise<IncidentAlertState[]> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(
        `UPDATE incident_alerts SET lease_owner = $1, lease_until = $3
         WHERE incident_id IN (
           SELECT incident_id FROM incident_alerts
           WHERE resolved_at IS NULL AND acknowledged_at IS NULL AND next_due_at IS NOT NULL AND next_due_at <= $2
             AND (lease_until IS NULL OR lease_until < $2) AND NOT (incident_id = ANY($5::text[]))
           ORDER BY next_due_at LIMIT $4 FOR UPDATE SKIP LOCKED)
         RETURNING ${COLUMNS}`,
        [owner, ts(now), ts(now + leaseMs), limit, working],
      ),
    );
    return rows.map(decode);
  }

  /** Extends this runner's leases of `ids` (rows it is still sending for) to `now + leaseMs`. */
  async renew(owner: string, ids: readonly string[], now: number, leaseMs: number): Promise<void> {
    if (ids.length === 0) return;
    await registryCall(() =>
      this.db.query(
        'UPDATE incident_alerts SET lease_until = $3 WHERE lease_owner = $1 AND incident_id = ANY($2::text[])',
        [owner, ids, ts(now + leaseMs)],
      ),
    );
  }

  /** Writes back a claimed row's progress and ends the lease; false when the lease was lost. */
  async finish(incidentId: string, owner: string, p: IncidentProgress): Promise<boolean> {
    const { rowCount } = await registryCall(() =>
      this.db.query(
        `UPDATE incident_alerts SET step = $3, step_at = $4, reminders = $5::jsonb,
           next_due_at = CASE WHEN resolved_at IS NULL THEN $6::timestamptz ELSE NULL END,
           lease_owner = NULL, lease_until = NULL
         WHERE incident_id = $1 AND lease_owner = $2`,
        [incidentId, owner, p.step, ts(p.step_at), JSON.stringify(p.reminders), ts(p.next_due_at)],
      ),
    );
    return rowCount === 1;
  }

  /** Sets when the row is next due (after its first step went out, or a settings change). */
  async schedule(incidentId: string, nextDueAt: number | null): Promise<void> {
    await registryCall(() =>
      this.db.query('UPDATE incident_alerts SET next_due_at = $2 WHERE incident_id = $1 AND resolved_at IS NULL', [
        incidentId,
        ts(nextDueAt),
      ]),
    );
  }
}
