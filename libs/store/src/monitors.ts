import { isIP } from 'node:net';
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
import {
  DEFAULT_HEARTBEAT_GRACE_SECONDS,
  DEFAULT_LOCATION,
  DEFAULT_TENANT,
  DEFAULT_TLS_MIN_DAYS,
  isForbiddenMonitorHeader,
  parsesAsUrl,
  toIsoSeconds,
} from '@telemetry/contract';
import {
  sqlIdentifier,
  sqlNumber,
  sqlString,
  sqlStringList,
  type MigrationsByVersion,
  type EgressPolicy,
  type SecretBox,
  connectUrl,
} from '@telemetry/platform';
import { registryDatabase, tableIn } from './databases.js';
import { maskHeaders, maskUrl, maskWebhooks } from './monitor-secrets.js';

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
  // Tenants: the tenant leads the sort key. Secrets move out of `spec` into `sealed`
  // (AES-256-GCM, see MonitorStore); rows copied here keep theirs in `spec` until the
  // query service re-seals them at start (sealLegacy).
  4: (db) => [
    { setAside: { table: 'monitors', marker: 'tenant_id' } },
    `CREATE TABLE IF NOT EXISTS ${db}.monitors (
        tenant_id String, id String, version UInt64, deleted UInt8, spec String, sealed String,
        created_at DateTime('UTC'), updated_at DateTime('UTC')
      ) ENGINE = ReplacingMergeTree(version)
      ORDER BY (tenant_id, id)`,
    {
      copyBack: {
        table: 'monitors',
        sql: (
          from,
        ) => `INSERT INTO ${db}.monitors (tenant_id, id, version, deleted, spec, sealed, created_at, updated_at)
          SELECT '${DEFAULT_TENANT}', id, version, deleted, spec, '', created_at, updated_at FROM ${from}`,
      },
    },
  ],
  // Least privilege: the registry gets its own database (databases.ts).
  5: (_db, name) => [
    `CREATE DATABASE IF NOT EXISTS ${sqlIdentifier(registryDatabase(name))}`,
    { moveTable: { table: 'monitors', to: registryDatabase(name) } },
  ],
};

/** A monitor as stored: its tenant, its webhook signing secret and its row version. */
export interface StoredMonitor extends Omit<Monitor, 'status' | 'last_check_at'> {
  tenant_id: string;
  webhook_secret: string;
  version: number;
}

/** The fields that belong to one type only, as a monitor of another type has them. */
const TYPE_FIELDS = {
  tcp_send: null,
  tcp_expect: null,
  tls_min_days: null,
  dns_record_type: null,
  dns_expected: [],
  dns_resolver: null,
  heartbeat_grace_seconds: null,
} satisfies Partial<MonitorSettings>;

/** The settings added since monitors were first stored: what a monitor stored before them gets. */
const ADDED_SETTINGS = {
  type: 'http',
  ...TYPE_FIELDS,
  confirm_delay_ms: 0,
  maintenance_windows: [],
  locations: [DEFAULT_LOCATION],
  quorum: null,
} satisfies Partial<MonitorSettings>;

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
  ...ADDED_SETTINGS,
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
  if (s.confirm_delay_ms > 0 && s.confirm_delay_ms + 2 * s.timeout_ms > s.interval_seconds * 1000) {
    problems.push({
      path: '/confirm_delay_ms',
      message: 'with two timeouts (the check and its confirmation) must fit in interval_seconds',
    });
  }
  if (s.degraded_threshold_ms !== null && s.degraded_threshold_ms >= s.timeout_ms) {
    problems.push({ path: '/degraded_threshold_ms', message: 'must be shorter than timeout_ms' });
  }
  if (s.body !== null && (s.method === 'GET' || s.method === 'HEAD')) {
    problems.push({ path: '/body', message: 'GET and HEAD checks send no body' });
  }
  for (const name of Object.keys(s.headers)) {
    if (isForbiddenMonitorHeader(name)) {
      problems.push({ path: `/headers/${name}`, message: 'is set by the connection itself and may not be set' });
    }
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

/** A heartbeat monitor's URL: it names the monitor (its job calls the gateway, see heartbeatToken). */
export function heartbeatUrl(monitorId: string): string {
  return `heartbeat://${monitorId}`;
}

const URL_FORMS: Record<string, string> = {
  tcp: 'a tcp monitor checks tcp://host:port, with nothing else',
  tls: 'a tls monitor checks tls://host or tls://host:port (443 by default), with nothing else',
  dns: 'a dns monitor checks dns://name (the name to resolve), with nothing else',
};

/**
 * A dns monitor's resolver as an address and a port (53 by default), or undefined when it
 * is not an IP literal with an optional port.
 */
export function resolverAddress(resolver: string): { address: string; port: number } | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+))(?::(\d{1,5}))?$/.exec(resolver);
  const address = m?.[1] ?? m?.[2];
  const port = m?.[3] === undefined ? 53 : Number(m[3]);
  if (!address || isIP(address) === 0 || port < 1 || port > 65_535) return undefined;
  return { address, port };
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

/** Each type's URL form, and the fields that belong to another type. */
function typeProblems(s: MonitorSettings): Problem[] {
  const problems: Problem[] = [];
  const only = (path: string, type: string): void => {
    problems.push({ path, message: `applies to ${type} monitors only` });
  };
  let url: URL | undefined;
  if (s.url !== '' && parsesAsUrl(s.url)) url = new URL(s.url);
  // The schema's format check refuses it in a request; a monitor stored before that check
  // and patched now is refused here.
  else if (s.url !== '') problems.push({ path: '/url', message: 'is not a URL this server can parse' });
  if (s.type !== 'tcp') {
    if (s.tcp_send !== null) only('/tcp_send', 'tcp');
    if (s.tcp_expect !== null) only('/tcp_expect', 'tcp');
  }
  if (s.type !== 'tls' && s.tls_min_days !== null) only('/tls_min_days', 'tls');
  if (s.type !== 'heartbeat' && s.heartbeat_grace_seconds !== null) only('/heartbeat_grace_seconds', 'heartbeat');
  if (s.url === '' && s.type !== 'heartbeat') problems.push({ path: '/url', message: 'is required' });
  if (s.type === 'heartbeat') {
    // Its URL is the server's (a heartbeat:// URL sent back from a GET is taken as it is).
    if (s.url !== '' && !s.url.startsWith('heartbeat://')) {
      problems.push({
        path: '/url',
        message: 'a heartbeat monitor has no url: its job calls POST /api/heartbeats/{heartbeat_token}',
      });
    }
    if (s.locations.length > 1) {
      problems.push({ path: '/locations', message: 'a heartbeat monitor is watched from one location' });
    }
    if (s.confirm_delay_ms > 0) only('/confirm_delay_ms', 'http, tcp, tls and dns');
  } else if (url?.protocol === 'heartbeat:') {
    problems.push({ path: '/url', message: 'heartbeat:// is the URL of heartbeat monitors only' });
  }
  if (s.type !== 'dns') {
    if (s.dns_record_type !== null) only('/dns_record_type', 'dns');
    if (s.dns_expected.length > 0) only('/dns_expected', 'dns');
    if (s.dns_resolver !== null) only('/dns_resolver', 'dns');
  } else if (s.dns_resolver !== null && resolverAddress(s.dns_resolver) === undefined) {
    problems.push({ path: '/dns_resolver', message: 'must be an IP address, with an optional port' });
  }
  if (s.type === 'heartbeat') {
    httpOnly(s, only);
    return problems;
  }
  if (s.type === 'http') {
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:')
      problems.push({ path: '/url', message: 'an http monitor checks an http:// or https:// URL' });
    return problems;
  }
  const plain =
    url &&
    url.protocol === `${s.type}:` &&
    (s.type === 'dns' ? url.port === '' : url.port !== '' || s.type === 'tls') &&
    (url.pathname === '' || url.pathname === '/') &&
    !url.search &&
    !url.hash &&
    !url.username &&
    !url.password;
  if (url && !plain)
    problems.push({
      path: '/url',
      message: URL_FORMS[s.type] ?? 'does not fit the monitor type',
    });
  httpOnly(s, only);
  return problems;
}

/** The fields of http monitors, set on another type. */
function httpOnly(s: MonitorSettings, only: (path: string, type: string) => void): void {
  if (s.keyword !== null) only('/keyword', 'http');
  if (s.body !== null) only('/body', 'http');
  if (Object.keys(s.headers).length > 0) only('/headers', 'http');
}

/**
 * The monitor's URL and webhook URLs that are IP literals the policy denies (names are
 * judged when a check connects): JSON pointers and why.
 */
export function deniedTargets(
  s: Pick<MonitorSettings, 'url' | 'webhooks'> & Partial<Pick<MonitorSettings, 'type' | 'dns_resolver'>>,
  policy: EgressPolicy,
): Problem[] {
  const problems: Problem[] = [];
  const judge = (path: string, raw: string): void => {
    // One that does not parse is a validation problem (monitorProblems), not a target.
    if (!parsesAsUrl(raw)) return;
    const verdict = policy.checkUrl(connectUrl(new URL(raw)));
    if (verdict && !verdict.allowed) problems.push({ path, message: verdict.reason });
  };
  // A dns monitor's URL names what to resolve, not where to connect: its resolver is judged.
  if (s.type !== 'dns' && s.type !== 'heartbeat') judge('/url', s.url);
  const resolver = s.dns_resolver ? resolverAddress(s.dns_resolver) : undefined;
  if (resolver) {
    const verdict = policy.check(resolver.address, resolver.port);
    if (!verdict.allowed) problems.push({ path: '/dns_resolver', message: verdict.reason });
  }
  s.webhooks.forEach((w, i) => judge(`/webhooks/${i}`, w));
  return problems;
}

function settingsOf(m: MonitorSettings): MonitorSettings {
  return {
    name: m.name,
    type: m.type,
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
    tcp_send: m.tcp_send,
    tcp_expect: m.tcp_expect,
    tls_min_days: m.tls_min_days,
    confirm_delay_ms: m.confirm_delay_ms,
    dns_record_type: m.dns_record_type,
    dns_expected: m.dns_expected,
    dns_resolver: m.dns_resolver,
    maintenance_windows: m.maintenance_windows,
    heartbeat_grace_seconds: m.heartbeat_grace_seconds,
    locations: m.locations,
    quorum: m.quorum,
  };
}

/** Settings of a new monitor: the request's, defaults for the rest. */
export function createSettings(body: MonitorCreate, id: string): MonitorSettings {
  const { webhook_secret: _secret, ...given } = body;
  const s = settingsOf({ url: '', ...DEFAULT_MONITOR, ...typeDefaults(given.type), ...given });
  return fitTimeout(withHeartbeatUrl(s, id), given.timeout_ms);
}

/** A heartbeat monitor's URL is its own (heartbeatUrl), whatever was sent; a grace cleared with null is the default. */
function withHeartbeatUrl(s: MonitorSettings, id: string): MonitorSettings {
  if (s.type !== 'heartbeat') return s;
  const grace = s.heartbeat_grace_seconds ?? DEFAULT_HEARTBEAT_GRACE_SECONDS;
  return s.url === '' || s.url.startsWith('heartbeat://')
    ? { ...s, url: heartbeatUrl(id), heartbeat_grace_seconds: grace }
    : { ...s, heartbeat_grace_seconds: grace };
}

/** Settings after a PATCH: the request's fields replace the stored ones. */
export function patchSettings(current: MonitorSettings & { id: string }, patch: MonitorPatch): MonitorSettings {
  const { webhook_secret: _secret, ...given } = patch;
  // Another type: the old type's fields go back to their defaults, the new one's get theirs,
  // unless the request sets them.
  const base =
    given.type !== undefined && given.type !== current.type
      ? { ...current, ...TYPE_FIELDS, ...typeDefaults(given.type) }
      : current;
  // A stored timeout may have been chosen: a shorter interval does not change it (400).
  const url = given.type === 'heartbeat' && given.url === undefined ? '' : (given.url ?? base.url);
  return withHeartbeatUrl(settingsOf({ ...base, ...given, url }), current.id);
}

/** A type's own defaults: 14 days of a tls monitor, the A record of a dns one. */
function typeDefaults(type: MonitorSettings['type'] | undefined): Partial<MonitorSettings> {
  if (type === 'tls') return { tls_min_days: DEFAULT_TLS_MIN_DAYS };
  if (type === 'dns') return { dns_record_type: 'A' };
  if (type === 'heartbeat') return { heartbeat_grace_seconds: DEFAULT_HEARTBEAT_GRACE_SECONDS };
  return {};
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

/**
 * What the API returns: header values, the URL's userinfo and query values masked,
 * webhooks as scheme and host (monitor-secrets.ts), never the webhook secret unless
 * `withSecret` (the response that set it).
 */
export function publicMonitor(m: StoredMonitor, activity: MonitorActivity = {}, withSecret = false): Monitor {
  return {
    id: m.id,
    ...settingsOf(m),
    ...shownSecrets(m),
    ...(withSecret ? { webhook_secret: m.webhook_secret } : {}),
    status: monitorStatus(m, activity),
    last_check_at: activity.lastCheckAt ?? null,
    created_at: m.created_at,
    updated_at: m.updated_at,
  };
}

/**
 * Versions of a registry's rows (ReplacingMergeTree(version)): microseconds of the clock,
 * but always above the version a change was based on and above this process's last, so
 * they grow even when replicas' clocks differ.
 */
export class RowVersions {
  private last = 0;

  next(after = 0): number {
    this.last = Math.max(this.last + 1, Date.now() * 1000, after + 1);
    return this.last;
  }
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
  x: string;
  v: string | number;
  d: number | string;
}

/**
 * What `sealed` holds: the secrets that `spec` shows masked. `webhooks` is absent in
 * rows sealed before webhook URLs were secrets: theirs are in `spec`.
 */
interface Sealed {
  url: string;
  headers: Record<string, string>;
  webhook_secret: string;
  webhooks?: string[];
}

/**
 * In `spec` of rows whose webhook URLs are sealed (and shown there as scheme and host):
 * a row without it is re-sealed at start (MonitorStore.reseal).
 */
const WEBHOOKS_SEALED = 'webhooks_sealed';
const WEBHOOKS_SEALED_MARK = `"${WEBHOOKS_SEALED}":true`;

/** The secrets' shown forms (monitor-secrets.ts): what answers and `spec` hold. */
function shownSecrets(m: Pick<MonitorSettings, 'url' | 'headers' | 'webhooks'>) {
  return { url: maskUrl(m.url), headers: maskHeaders(m.headers), webhooks: maskWebhooks(m.webhooks) };
}

function toUnixSeconds(iso: string): number {
  return Math.floor(Date.parse(iso) / 1000);
}

export interface ListOptions {
  /** Only this tenant's monitors (every API read); all tenants when absent (the runners). */
  tenantId?: string;
  afterId?: string;
  ids?: readonly string[];
  limit?: number;
  /** Deleted monitors too (their last row): for re-sealing. */
  includeDeleted?: boolean;
  /**
   * Only monitors whose newest row is not sealed with this key (plain, or another key),
   * or whose webhook URLs are not sealed yet.
   */
  notSealedWith?: string;
}

/**
 * The registry's rows. Secrets (header values, the URL, webhook URLs, the webhook
 * secret) are sealed with `box` into the `sealed` column, bound to the monitor's tenant
 * and id; `spec` holds the rest, with the secrets masked, so analysts reading the table
 * see none.
 */
export class MonitorStore {
  private readonly table: string;
  private readonly versions = new RowVersions();

  constructor(
    private readonly client: ClickHouseClient,
    database: string,
    private readonly box: SecretBox,
  ) {
    this.table = tableIn(database, 'registry', 'monitors');
  }

  /**
   * Current monitors in id order: all, those after `afterId`, or those in `ids`.
   * The newest row of each id wins; deleted ones are left out.
   */
  async list(opts: ListOptions = {}): Promise<StoredMonitor[]> {
    return (await this.rows(opts)).map((r) => r.monitor);
  }

  private async rows(opts: ListOptions): Promise<{ monitor: StoredMonitor; deleted: boolean }[]> {
    const where: string[] = [];
    if (opts.tenantId !== undefined) where.push(`tenant_id = ${sqlString(opts.tenantId)}`);
    if (opts.ids !== undefined) {
      if (opts.ids.length === 0) return [];
      where.push(`id IN ${sqlStringList(opts.ids)}`);
    }
    if (opts.afterId !== undefined) where.push(`id > ${sqlString(opts.afterId)}`);
    const having = opts.includeDeleted ? [] : ['argMax(deleted, version) = 0'];
    if (opts.notSealedWith !== undefined) {
      const prefix = `v1.${opts.notSealedWith}.`;
      having.push(
        `(substring(argMax(sealed, version), 1, ${sqlNumber(prefix.length)}) != ${sqlString(prefix)}
          OR position(argMax(spec, version), ${sqlString(WEBHOOKS_SEALED_MARK)}) = 0)`,
      );
    }
    // NOTE: aliases differ from the columns: ClickHouse would substitute an alias named
    // like a column into the aggregate's own argument.
    const rs = await this.client.query({
      query: `SELECT id, argMax(spec, version) AS s, argMax(sealed, version) AS x, max(version) AS v,
          argMax(deleted, version) AS d
        FROM ${this.table}
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        GROUP BY id
        ${having.length ? `HAVING ${having.join(' AND ')}` : ''}
        ORDER BY id
        ${opts.limit !== undefined ? `LIMIT ${sqlNumber(opts.limit)}` : ''}`,
      format: 'JSONEachRow',
      clickhouse_settings: { output_format_json_quote_64bit_integers: 1 },
    });
    const rows = await rs.json<Row>();
    return rows.map((r) => ({ monitor: this.decode(r), deleted: Number(r.d) !== 0 }));
  }

  private decode(r: Row): StoredMonitor {
    const { [WEBHOOKS_SEALED]: _mark, ...spec } = {
      ...ADDED_SETTINGS,
      ...(JSON.parse(r.s) as Omit<StoredMonitor, 'version'> & { [WEBHOOKS_SEALED]?: true }),
    };
    const m: StoredMonitor = { ...spec, tenant_id: spec.tenant_id ?? DEFAULT_TENANT, version: Number(r.v) };
    // A row from before sealing (migration 4) holds its secrets in `spec`.
    if (r.x === '') return m;
    const secrets = JSON.parse(this.box.open(r.x, sealContext(m))) as Sealed;
    return {
      ...m,
      url: secrets.url,
      headers: secrets.headers,
      webhook_secret: secrets.webhook_secret,
      // Sealed before webhook URLs were secrets: they are still in `spec`.
      webhooks: secrets.webhooks ?? m.webhooks,
    };
  }

  async get(id: string, tenantId?: string): Promise<StoredMonitor | undefined> {
    return (await this.list({ ids: [id], tenantId }))[0];
  }

  /** Writes `m` as the newest version (or deletes it); returns that version. */
  async save(m: Omit<StoredMonitor, 'version'>, deleted = false, after = 0): Promise<number> {
    return (await this.saveMany([m], deleted, after))[0]!;
  }

  /**
   * save() for many monitors in one insert. Each version is above `after` (the version
   * the change was based on) and above this process's last, so versions grow even when
   * replicas' clocks differ.
   */
  async saveMany(monitors: readonly Omit<StoredMonitor, 'version'>[], deleted = false, after = 0): Promise<number[]> {
    const versions = monitors.map(() => this.nextVersion(after));
    await this.client.insert({
      table: this.table,
      format: 'JSONEachRow',
      values: monitors.map((m, i) => {
        const secrets: Sealed = {
          url: m.url,
          headers: m.headers,
          webhook_secret: m.webhook_secret,
          webhooks: m.webhooks,
        };
        const shown = { ...m, ...shownSecrets(m), webhook_secret: '', [WEBHOOKS_SEALED]: true };
        return {
          tenant_id: m.tenant_id,
          id: m.id,
          version: versions[i],
          deleted: deleted ? 1 : 0,
          spec: JSON.stringify(shown),
          sealed: this.box.seal(JSON.stringify(secrets), sealContext(m)),
          created_at: toUnixSeconds(m.created_at),
          updated_at: toUnixSeconds(m.updated_at),
        };
      }),
    });
    return versions;
  }

  /**
   * Re-seals every monitor whose newest row holds plain secrets (copied by migration 4,
   * or webhook URLs written before they were sealed) or was sealed with a key other than
   * the ring's first (a key rotation), then merges
   * the table so that the older rows are gone. Returns how many were re-sealed, and
   * whether the merge ran (OPTIMIZE is DDL, which the registry's user may be refused:
   * then the older rows go with ClickHouse's own merges, or an operator's OPTIMIZE).
   */
  async reseal(): Promise<{ resealed: number; merged: boolean }> {
    // Only the stale rows are read (and opened): nothing at all on an ordinary start.
    const stale = await this.rows({ includeDeleted: true, notSealedWith: this.box.keyId });
    for (const deleted of [false, true]) {
      const group = stale.filter((r) => r.deleted === deleted);
      if (group.length > 0) {
        await this.saveMany(
          group.map((r) => r.monitor),
          deleted,
          Math.max(...group.map((r) => r.monitor.version)),
        );
      }
    }
    let merged = true;
    if (stale.length > 0) {
      merged = await this.client.command({ query: `OPTIMIZE TABLE ${this.table} FINAL` }).then(
        () => true,
        () => false,
      );
    }
    return { resealed: stale.length, merged };
  }

  /** Microseconds since the epoch, above `after` and strictly increasing within this process. */
  private nextVersion(after: number): number {
    return this.versions.next(after);
  }
}

/** What a monitor's sealed secrets are bound to: they open only on that monitor's row. */
function sealContext(m: Pick<StoredMonitor, 'tenant_id' | 'id'>): string {
  return `monitors/${m.tenant_id}/${m.id}`;
}

/** The ids and tenants (`t`) of the current monitors, or of those among `ids` (for a reader; no FORMAT). */
export function currentMonitorIdsSql(database: string, ids?: readonly string[]): string {
  return `SELECT id, argMax(tenant_id, version) AS t FROM ${tableIn(database, 'registry', 'monitors')}
    ${ids ? `WHERE id IN ${sqlStringList(ids)}` : ''}
    GROUP BY id
    HAVING argMax(deleted, version) = 0`;
}

/** How many current monitors `tenantId` has (column n; for a reader, no FORMAT). */
export function tenantMonitorCountSql(database: string, tenantId: string): string {
  return `SELECT count() AS n FROM (
      SELECT id FROM ${tableIn(database, 'registry', 'monitors')}
      WHERE tenant_id = ${sqlString(tenantId)}
      GROUP BY id
      HAVING argMax(deleted, version) = 0
    )`;
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
export function placeholderMonitor(
  id: string,
  name = id,
  tenantId: string = DEFAULT_TENANT,
): Omit<StoredMonitor, 'version'> {
  const now = toIsoSeconds(Math.floor(Date.now() / 1000));
  return {
    tenant_id: tenantId,
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
