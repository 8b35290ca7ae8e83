import { createHash, randomBytes } from 'node:crypto';
import type { ClickHouseClient } from '@clickhouse/client';
import type {
  Monitor,
  MonitorCreate,
  MonitorPatch,
  MonitorSettings,
  MonitorStatus,
  Problem,
} from '@telemetry/contract';
import { toIsoSeconds } from '@telemetry/contract';
import { sqlIdentifier, sqlNumber, sqlString, sqlStringList, type MigrationsByVersion } from '@telemetry/platform';

/**
 * The monitor registry, stored in ClickHouse's `monitors` table (docs/clickhouse.md):
 * every create, change and delete inserts a whole new row with a larger `version`,
 * and the newest row of an id is the monitor. Shared by the query service (which
 * writes) and the check runner (which reads).
 */

/** Statements per migration version (see migrations.ts). */
export const monitorsMigrations: MigrationsByVersion = {
  // One row per change; the newest version of an id is the monitor (deleted = 1: gone).
  3: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.monitors (
        id String, version UInt64, deleted UInt8, spec String, created_at DateTime('UTC'),
        updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY id`,
  ],
};

/** A monitor as stored: with its webhook signing secret and its row version. */
export interface StoredMonitor extends Omit<Monitor, 'status' | 'last_check_at'> {
  webhook_secret: string;
  version: number;
}

export const DEFAULT_MONITOR: Omit<MonitorSettings, 'name' | 'url'> = {
  method: 'GET',
  interval_seconds: 60,
  timeout_ms: 10_000,
  expected_status_codes: ['2xx'],
  keyword: null,
  degraded_threshold_ms: null,
  failure_threshold: 2,
  recovery_threshold: 1,
  follow_redirects: true,
  headers: {},
  body: null,
  paused: false,
  webhooks: [],
};

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
  if (s.degraded_threshold_ms !== null && s.degraded_threshold_ms >= s.timeout_ms) {
    problems.push({ path: '/degraded_threshold_ms', message: 'must be shorter than timeout_ms' });
  }
  if (s.body !== null && (s.method === 'GET' || s.method === 'HEAD')) {
    problems.push({ path: '/body', message: 'GET and HEAD checks send no body' });
  }
  return problems;
}

function settingsOf(m: MonitorSettings): MonitorSettings {
  return {
    name: m.name,
    url: m.url,
    method: m.method,
    interval_seconds: m.interval_seconds,
    timeout_ms: m.timeout_ms,
    expected_status_codes: m.expected_status_codes,
    keyword: m.keyword,
    degraded_threshold_ms: m.degraded_threshold_ms,
    failure_threshold: m.failure_threshold,
    recovery_threshold: m.recovery_threshold,
    follow_redirects: m.follow_redirects,
    headers: m.headers,
    body: m.body,
    paused: m.paused,
    webhooks: m.webhooks,
  };
}

/** Settings of a new monitor: the request's, defaults for the rest. */
export function createSettings(body: MonitorCreate): MonitorSettings {
  const { webhook_secret: _secret, ...given } = body;
  return fitTimeout(settingsOf({ ...DEFAULT_MONITOR, ...given }), given.timeout_ms);
}

/** Settings after a PATCH: the request's fields replace the stored ones. */
export function patchSettings(current: MonitorSettings, patch: MonitorPatch): MonitorSettings {
  const { webhook_secret: _secret, ...given } = patch;
  // A stored timeout may have been chosen: a shorter interval does not change it (400).
  return settingsOf({ ...current, ...given });
}

/**
 * On create, a timeout the request did not set shrinks to fit a shorter interval (a 5 s
 * monitor gets a 5 s timeout, not the default 10 s); one it did set is checked as given.
 */
function fitTimeout(s: MonitorSettings, given: number | undefined): MonitorSettings {
  if (given !== undefined || s.timeout_ms <= s.interval_seconds * 1000) return s;
  return { ...s, timeout_ms: s.interval_seconds * 1000 };
}

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

/** What the API returns: never the secret, unless `withSecret` (the response that set it). */
export function publicMonitor(m: StoredMonitor, activity: MonitorActivity = {}, withSecret = false): Monitor {
  return {
    id: m.id,
    ...settingsOf(m),
    ...(withSecret ? { webhook_secret: m.webhook_secret } : {}),
    status: monitorStatus(m, activity),
    last_check_at: activity.lastCheckAt ?? null,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}

/** Notice on the monitor-changes topic that a monitor changed; its key is the id. */
export interface MonitorChange {
  id: string;
  version: number;
  deleted: boolean;
}

interface Row {
  id: string;
  s: string;
  v: string | number;
}

function toUnixSeconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}

export class MonitorStore {
  private readonly table: string;
  private lastVersion = 0;

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
  ) {
    this.table = `${sqlIdentifier(database)}.monitors`;
  }

  /**
   * Current monitors in id order: all, those after `afterId`, or those in `ids`.
   * The newest row of each id wins; deleted ones are left out.
   */
  async list(opts: { afterId?: string; ids?: readonly string[]; limit?: number } = {}): Promise<StoredMonitor[]> {
    const where: string[] = [];
    if (opts.ids !== undefined) {
      if (opts.ids.length === 0) return [];
      where.push(`id IN ${sqlStringList(opts.ids)}`);
    }
    if (opts.afterId !== undefined) where.push(`id > ${sqlString(opts.afterId)}`);
    // NOTE: aliases differ from the columns: ClickHouse would substitute an alias named
    // like a column into the aggregate's own argument.
    const rs = await this.client.query({
      query: `SELECT id, argMax(spec, version) AS s, max(version) AS v
        FROM ${this.table}
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        GROUP BY id
        HAVING argMax(deleted, version) = 0
        ORDER BY id
        ${opts.limit !== undefined ? `LIMIT ${sqlNumber(opts.limit)}` : ''}`,
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 1 },
    });
    const rows = await rs.json<Row>();
    return rows.map((r) => ({ ...(JSON.parse(r.s) as Omit<StoredMonitor, 'version'>), version: Number(r.v) }));
  }

  async get(id: string): Promise<StoredMonitor | undefined> {
    return (await this.list({ ids: [id] }))[0];
  }

  /** Writes `m` as the newest version (or deletes it); returns that version. */
  async save(m: Omit<StoredMonitor, 'version'>, deleted = false): Promise<number> {
    return (await this.saveMany([m], deleted))[0]!;
  }

  /** save() for many monitors in one insert. */
  async saveMany(monitors: readonly Omit<StoredMonitor, 'version'>[], deleted = false): Promise<number[]> {
    const versions = monitors.map(() => this.nextVersion());
    await this.client.insert({
      table: this.table,
      format: 'JSONEachRow',
      values: monitors.map((m, i) => ({
        id: m.id,
        version: versions[i],
        deleted: deleted ? 1 : 0,
        spec: JSON.stringify(m),
        created_at: toUnixSeconds(m.created_at),
        updated_at: toUnixSeconds(m.updated_at),
      })),
    });
    return versions;
  }

  /** Microseconds since the epoch, strictly increasing within this process. */
  private nextVersion(): number {
    this.lastVersion = Math.max(this.lastVersion + 1, Date.now() * 1000);
    return this.lastVersion;
  }
}

/** The ids of the current monitors, or of those among `ids` (for a reader; no FORMAT). */
export function currentMonitorIdsSql(database: string, ids?: readonly string[]): string {
  return `SELECT id FROM ${sqlIdentifier(database)}.monitors
    ${ids ? `WHERE id IN ${sqlStringList(ids)}` : ''}
    GROUP BY id
    HAVING argMax(deleted, version) = 0`;
}

/**
 * The partition of the monitor-changes topic that carries `id`'s changes, and so the
 * check runner that owns it. The query service produces with it and runners read it.
 */
export function monitorPartition(id: string, partitions: number): number {
  return createHash('sha1').update(id).digest().readUInt32BE(0) % partitions;
}

/**
 * A paused monitor with this id, checking nothing: registers an id whose check history
 * is written by other means (demo data, benchmarks, tests).
 */
export function placeholderMonitor(id: string, name = id): Omit<StoredMonitor, 'version'> {
  const now = toIsoSeconds(Math.floor(Date.now() / 1000));
  return {
    id,
    ...DEFAULT_MONITOR,
    name,
    url: 'http://127.0.0.1:9/',
    paused: true,
    webhook_secret: newWebhookSecret(),
    created_at: now,
    updated_at: now,
  };
}
