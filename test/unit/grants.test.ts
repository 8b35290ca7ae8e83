import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { ClickHouseClient } from '@clickhouse/client';
import {
  applyRetention,
  auditLogSql,
  checksSql,
  dailyCountsSql,
  databasesOf,
  DEFAULT_MONITOR,
  eventsPerMinuteSql,
  grantStatements,
  incidentsSql,
  lastAlertsSql,
  lastChecksSql,
  MonitorDimension,
  openIncidentsSql,
  placeholderMonitor,
  retentionRules,
  screenshotSql,
  SERVICE_USER_NAMES,
  streamTables,
  summarySql,
  webhookDeliveriesSql,
  type DatabaseRole,
  type Privilege,
  type ServiceUser,
  LOCAL_LAYOUT,
} from '@telemetry/store';
import { lastAlerts, lastHeartbeat, slotChecks } from '../../services/check-runner/src/registry.js';
import { USERS_SCRIPT_FILE, usersScript } from '../../tools/deploy/users-sh.js';
import { silentLogger } from './support/fakes.js';

const DB = 'telemetry';
const ROLES = new Map<string, DatabaseRole>(
  Object.entries(databasesOf(DB)).map(([role, name]) => [name, role as DatabaseRole]),
);

interface Access {
  database: DatabaseRole;
  table: string;
  privilege: Privilege;
}

const IDENT = '`?([A-Za-z_][A-Za-z0-9_]*)`?';
const QUALIFIED = `${IDENT}\\.${IDENT}`;

function access(db: string, table: string, privilege: Privilege, sql: string): Access[] {
  if (db === 'system') return []; // readable by anyone (rows of the tables they may use)
  const database = ROLES.get(db);
  if (!database) throw new Error(`a statement names database ${db}: ${sql}`);
  return [{ database, table, privilege }];
}

/** What a statement needs: the privilege per table it names (database-qualified, as our SQL always is). */
function accessesOf(sql: string): Access[] {
  const out: Access[] = [];
  const alter = new RegExp(`^\\s*ALTER TABLE ${QUALIFIED}\\s+(DROP PARTITION|MODIFY TTL|REMOVE TTL)`, 'i').exec(sql);
  if (alter) {
    out.push(...access(alter[1]!, alter[2]!, /PARTITION/i.test(alter[3]!) ? 'ALTER DELETE' : 'ALTER TTL', sql));
  } else if (/^\s*ALTER/i.test(sql)) throw new Error(`an ALTER this test does not know: ${sql}`);
  for (const m of sql.matchAll(new RegExp(`\\bINSERT INTO ${QUALIFIED}`, 'gi'))) {
    out.push(...access(m[1]!, m[2]!, 'INSERT', sql));
  }
  for (const m of sql.matchAll(new RegExp(`\\b(?:FROM|JOIN)\\s+(${QUALIFIED}|${IDENT}\\s*\\(?)`, 'gi'))) {
    if (m[2] !== undefined) out.push(...access(m[2], m[3]!, 'SELECT', sql));
    else if (!m[1]!.endsWith('(')) throw new Error(`a table without its database: ${m[1]} in ${sql}`);
  }
  return out;
}

/** A ClickHouse client that records what it is asked and answers from `answer`. */
function recordingClient(answer: (sql: string) => object[] = () => []) {
  const statements: string[] = [];
  const client = {
    query: ({ query }: { query: string }) => {
      statements.push(query);
      return Promise.resolve({ json: () => Promise.resolve(answer(query)) });
    },
    command: ({ query }: { query: string }) => {
      statements.push(query);
      return Promise.resolve({});
    },
    insert: ({ table }: { table: string }) => {
      statements.push(`INSERT INTO ${table}`);
      return Promise.resolve({});
    },
  };
  return { client: client as unknown as ClickHouseClient, statements };
}

const monitor = { ...placeholderMonitor('mon_a', 'a', 'ten_a'), ...DEFAULT_MONITOR, version: 1 };

/**
 * The statements each service's ClickHouse user sends, made by the code that sends them
 * (the store's SQL builders and components, the runner's reads, retention on both engines).
 */
async function statementsOf(user: ServiceUser): Promise<string[]> {
  const r = recordingClient((sql) =>
    // Retention: a partition past its time (18.16), a table without a TTL (current ClickHouse).
    /system\.parts/.test(sql)
      ? [{ partition: '20200101', newest: 0 }]
      : /system\.tables/.test(sql)
        ? [{ engine_full: 'ReplacingMergeTree ORDER BY (tenant_id, id)' }]
        : [],
  );
  const ids = ['mon_a'];
  const q = { tenantId: 'ten_a', monitorId: 'mon_a' };
  switch (user) {
    case 'ingest':
      // Nothing since the registry moved to PostgreSQL.
      break;
    case 'runner':
      await lastAlerts(r.client, DB, LOCAL_LAYOUT, ids);
      await slotChecks(r.client, DB, LOCAL_LAYOUT, monitor, ['chk_a'], Date.now());
      await lastHeartbeat(r.client, DB, LOCAL_LAYOUT, monitor, 0);
      break;
    case 'consumer': {
      const days = { events: 30, checks: 90, rollups: 365, screenshots: 30 };
      await applyRetention(r.client, DB, retentionRules(days), silentLogger, { version: '18.16.1', modern: false });
      await applyRetention(r.client, DB, retentionRules(days), silentLogger, { version: '25.8.1', modern: true });
      const withTtl = recordingClient((sql) =>
        /system\.tables/.test(sql) ? [{ engine_full: 'MergeTree TTL toDateTime(x) + toIntervalDay(3) SETTINGS' }] : [],
      );
      await applyRetention(
        withTtl.client,
        DB,
        retentionRules({ events: 0, checks: 0, rollups: 0, screenshots: 0 }),
        silentLogger,
        {
          version: '25.8.1',
          modern: true,
        },
      );
      r.statements.push(...withTtl.statements);
      // Its inserts: each topic's table (service.ts), the first-seen times and its freshness rows.
      for (const t of [
        'events',
        'checks',
        'alerts',
        'webhook_deliveries',
        'failed_events',
        'check_screenshots',
        'event_first_seen',
        'freshness',
      ]) {
        r.statements.push(`INSERT INTO ${DB}.${t}`);
      }
      r.statements.push(`SELECT event_id FROM ${DB}.event_first_seen`);
      break;
    }
    case 'query': {
      const checks = { ...q, limit: 10, order: 'desc' as const, from: 0, to: 1, statuses: [], cursor: undefined };
      r.statements.push(
        checksSql(DB, LOCAL_LAYOUT, checks),
        ...Object.values(summarySql(DB, LOCAL_LAYOUT, { ...q, interval: 'hour', from: 0, to: 1 })),
        incidentsSql(DB, LOCAL_LAYOUT, 'ten_a', 'mon_a', 10),
        eventsPerMinuteSql(DB, LOCAL_LAYOUT, 'ten_a', 0, 1, 10),
        webhookDeliveriesSql(DB, LOCAL_LAYOUT, { ...q, limit: 10 }),
        auditLogSql(DB, LOCAL_LAYOUT, {
          tenantId: 'ten_a',
          limit: 10,
          action: 'monitor.',
          cursor: { ms: 1, id: 'aud_a' },
        }),
        lastChecksSql(DB, LOCAL_LAYOUT, 'ten_a', ids),
        lastAlertsSql(DB, LOCAL_LAYOUT, ids, 'ten_a'),
        dailyCountsSql(DB, LOCAL_LAYOUT, 'ten_a', ids, 0, 1),
        openIncidentsSql(DB, LOCAL_LAYOUT, 'ten_a', ids),
        screenshotSql(DB, LOCAL_LAYOUT, { ...q, checkId: 'chk_a' }),
      );
      break;
    }
    case 'registry': {
      // The monitors dimension table, written in full and per change (deleted ones too).
      const summary = { ...monitor, paused: false };
      const dimension = new MonitorDimension(
        r.client,
        DB,
        (asked) => Promise.resolve(asked === undefined ? [summary] : []),
        silentLogger,
      );
      await dimension.reload();
      await dimension.settled();
      await dimension.apply(['mon_gone']);
      await dimension.settled();
      break;
    }
    case 'audit':
      // Its one table (stream-consumer service.ts): the audit log, in <db>_audit.
      r.statements.push(`INSERT INTO ${streamTables(DB, LOCAL_LAYOUT).audit_log}`);
      break;
    case 'analyst':
      break;
  }
  return r.statements;
}

/** The GRANTs deploy/clickhouse/users.sh makes, per user. */
function scriptGrants(script: string): Map<string, Access[]> {
  const grants = new Map<string, Access[]>();
  for (const [, privileges, suffix, table, user] of script.matchAll(
    /^GRANT(?:\$\{on_cluster\})? (.+) ON \$\{db\}(_[a-z]+)?\.(\*|[a-z_]+) TO ([a-z]+);$/gm,
  )) {
    const database = (suffix ? suffix.slice(1) : 'data') as DatabaseRole;
    const list = grants.get(user!) ?? [];
    for (const p of privileges!.split(', ')) list.push({ database, table: table!, privilege: p as Privilege });
    grants.set(user!, list);
  }
  return grants;
}

describe('ClickHouse users and grants (unit)', () => {
  it(`${USERS_SCRIPT_FILE} grants the consumer REMOTE on a cluster only (cluster() reads of system tables)`, () => {
    const script = readFileSync(USERS_SCRIPT_FILE, 'utf8');
    const [main, clusterOnly] = [...script.matchAll(/<<SQL\n([\s\S]*?)\nSQL\n/g)].map((m) => m[1]!);
    expect(main).to.not.include('REMOTE');
    expect(clusterOnly).to.include('GRANT${on_cluster} REMOTE ON *.* TO consumer;');
    expect(script).to.include('if [[ -n $on_cluster ]]; then\n  client <<SQL\n');
    const statements = (onCluster?: string) =>
      grantStatements({ db: (r) => r, name: (u) => u, password: () => "'p'", ...(onCluster ? { onCluster } : {}) })
        .flatMap((u) => u.statements)
        .filter((s) => s.includes('REMOTE'));
    expect(statements()).to.deep.equal([]);
    expect(statements(' ON CLUSTER c')).to.deep.equal(['GRANT ON CLUSTER c REMOTE ON *.* TO consumer']);
  });

  it(`${USERS_SCRIPT_FILE} is made from SERVICE_USERS (npm run docs)`, () => {
    expect(readFileSync(USERS_SCRIPT_FILE, 'utf8'), `run npm run docs to refresh ${USERS_SCRIPT_FILE}`).to.equal(
      usersScript(),
    );
  });

  it(`every statement each service sends is covered by its grants in ${USERS_SCRIPT_FILE}`, async () => {
    const grants = scriptGrants(readFileSync(USERS_SCRIPT_FILE, 'utf8'));
    const missing: string[] = [];
    for (const user of SERVICE_USER_NAMES) {
      const statements = await statementsOf(user);
      // The analysts' are theirs; the gateway reads no ClickHouse table since the registry moved.
      if (user !== 'analyst' && user !== 'ingest') expect(statements.length, user).to.be.greaterThan(0);
      if (user === 'ingest') expect(statements, user).to.deep.equal([]);
      for (const sql of statements) {
        for (const a of accessesOf(sql)) {
          const ok = (grants.get(user) ?? []).some(
            (g) => g.database === a.database && (g.table === '*' || g.table === a.table) && g.privilege === a.privilege,
          );
          if (!ok) missing.push(`${user}: ${a.privilege} on ${a.database}.${a.table}`);
        }
      }
    }
    expect([...new Set(missing)]).to.deep.equal([]);
  });

  it('reads what a statement needs', () => {
    expect(
      accessesOf(`ALTER TABLE \`${DB}\`.\`checks\` MODIFY TTL toDateTime(created_at) + toIntervalDay(3)`),
    ).to.deep.equal([{ database: 'data', table: 'checks', privilege: 'ALTER TTL' }]);
    expect(accessesOf(`INSERT INTO ${DB}.a SELECT * FROM ${DB}_registry.b JOIN system.parts`)).to.deep.equal([
      { database: 'data', table: 'a', privilege: 'INSERT' },
      { database: 'registry', table: 'b', privilege: 'SELECT' },
    ]);
    expect(() => accessesOf('SELECT 1 FROM checks')).to.throw(/without its database/);
  });
});
