/**
 * Least privilege on the cluster (issue 46, item 3): every service ran as its own
 * ClickHouse user, the shards' part of distributed queries ran as the interserver user,
 * and a service's user is refused what it must not do, on one server of each shard.
 *
 * Read from each server's system.query_log (the cluster harness keeps it: server-config.ts
 * `logQueries`), asked as `default` directly on each server (not through HAProxy).
 */
import { sqlIdentifier, sqlNumber, sqlString } from '@telemetry/platform';
import { databasesOf } from '@telemetry/store';
import type { ClickHouseNode } from '../../tools/devstack/cluster.js';
import type { ClusterUsers, Credentials } from '../../tools/devstack/users.js';

export interface UsersVerdict {
  ok: boolean;
  /** One line for the report. */
  summary: string;
  problems: string[];
}

interface Answer {
  ok: boolean;
  text: string;
}

/** `sql` on the server at `url` as `who` (default: the admin `default`), in `database`. */
async function ask(
  url: string,
  sql: string,
  who?: Credentials,
  settings: Record<string, string> = {},
): Promise<Answer> {
  const params = new URLSearchParams({ user: who?.user ?? 'default', password: who?.password ?? '', ...settings });
  try {
    const r = await fetch(`${url}/?${params.toString()}`, {
      method: 'POST',
      body: sql,
      signal: AbortSignal.timeout(10_000),
    });
    return { ok: r.ok, text: (await r.text()).trim() };
  } catch (err) {
    return { ok: false, text: String(err) };
  }
}

interface LogRow {
  user: string;
  initial_user: string;
  is_initial_query: number;
  /** The table an INSERT names (`db`.`table` as written), or ''. */
  target: string;
  n: string;
}

/** The run's users' finished queries on one server, grouped by who ran them and for whom. */
async function queryLog(url: string, prefix: string, interserver: string): Promise<LogRow[]> {
  await ask(url, 'SYSTEM FLUSH LOGS');
  // type 2: QueryFinish (18.16 stores the number; current ClickHouse an Enum8 of it).
  const sql = `SELECT user, initial_user, is_initial_query,
      extract(query, '^\\\\s*(?:INSERT|insert) (?:INTO|into) +([^ (]+)') AS target, count() AS n
    FROM system.query_log
    WHERE toUInt8(type) = 2 AND (substring(initial_user, 1, ${sqlNumber(prefix.length)}) = ${sqlString(prefix)} OR user = ${sqlString(interserver)})
    GROUP BY user, initial_user, is_initial_query, target
    FORMAT JSONEachRow`;
  const a = await ask(url, sql);
  if (!a.ok) throw new Error(`system.query_log on ${url}: ${a.text.slice(0, 300)}`);
  return a.text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LogRow);
}

/** Refused, and for the reason expected (`why` in ClickHouse's message). */
function refused(a: Answer, why: RegExp): boolean {
  return !a.ok && why.test(a.text);
}

/**
 * The check. `shards`: the servers, one array per shard; `interserver`: the user of
 * remote_servers. Runs after the services have done their work (the scenarios).
 */
export async function checkServiceUsers(
  shards: ClickHouseNode[][],
  database: string,
  users: ClusterUsers,
  interserverUser: Credentials,
  /** Did the run send events (false when CLUSTER_ONLY chose no load scenario): the consumer must then have inserted some. */
  eventsSent = true,
): Promise<UsersVerdict> {
  const interserver = interserverUser.user;
  const problems: string[] = [];
  const dbs = databasesOf(database);
  const db = sqlIdentifier(dbs.data);
  const servers = shards.flat().filter((c) => c.running);

  // A read through events_all from every server as the query service's user, every shard
  // asked over the network (prefer_localhost_replica=0): the shards' part of it must run as
  // the interserver user, on behalf of the query user.
  for (const c of servers) {
    const a = await ask(c.url, `SELECT count() FROM ${db}.${sqlIdentifier('events_all')}`, users.query, {
      prefer_localhost_replica: '0',
    });
    if (!a.ok) problems.push(`the query user could not read events_all on ${c.name}: ${a.text.slice(0, 200)}`);
  }

  const rows = await Promise.all(servers.map((c) => queryLog(c.url, `${database}_`, interserver)))
    .then((r) => r.flat())
    .catch((err: unknown) => {
      problems.push(String(err));
      return [];
    });
  const byUser = new Map<string, number>();
  for (const r of rows) if (r.is_initial_query === 1) byUser.set(r.user, (byUser.get(r.user) ?? 0) + Number(r.n));
  // Every service that talks to ClickHouse (the gateways do not: their keys come from
  // PostgreSQL, events go to Kafka) and the migrations, each under its own user.
  const expected = ['migrator', 'consumer', 'audit', 'query', 'registry', 'runner'] as const;
  for (const u of expected) {
    if (!byUser.has(users[u].user)) problems.push(`no query of ${users[u].user} (${u}) in system.query_log`);
  }
  // The data goes in as the consumer, and only as it (the migrations' copies into a rebuilt
  // table aside).
  const eventInserts = rows.filter(
    (r) => r.is_initial_query === 1 && r.user !== users.migrator.user && /\bevents(_all)?\b/.test(r.target),
  );
  // The consumer inserts through events_all synchronously: each shard's part of it arrives
  // as an insert of its own into the local table, sent by 18.16 as the interserver user (an
  // initial query there). That is the only insert the interserver user may make.
  const inserters = [...new Set(eventInserts.map((r) => r.user))];
  const strayShardInserts = eventInserts.filter((r) => r.user === interserver && /\bevents_all\b/.test(r.target));
  if (
    (eventsSent && !inserters.includes(users.consumer.user)) ||
    inserters.some((u) => u !== users.consumer.user && u !== interserver)
  )
    problems.push(
      `events were inserted by ${inserters.join(', ') || 'nobody'}, not by ${users.consumer.user} (and the shards' parts of its inserts as ${interserver}) alone`,
    );
  if (strayShardInserts.length > 0) problems.push(`${interserver} inserted into events_all itself`);
  // The shards' part of every distributed query of the run's users ran as the interserver user.
  const secondary = rows.filter((r) => r.is_initial_query === 0);
  const wrong = [...new Set(secondary.filter((r) => r.user !== interserver).map((r) => r.user))];
  if (wrong.length > 0) problems.push(`shards ran a distributed query's part as ${wrong.join(', ')}`);
  const forQuery = secondary.filter((r) => r.user === interserver && r.initial_user === users.query.user);
  if (forQuery.length === 0) problems.push(`no shard ran a part of the query user's read as ${interserver}`);

  // Refused what it must not do, on one server of each shard.
  const probes: { who: string; as: Credentials; sql: string; why: RegExp }[] = [
    {
      who: 'the query service may not insert into events',
      as: users.query,
      sql: `INSERT INTO ${db}.events SELECT * FROM ${db}.events WHERE 0`,
      why: /readonly/i,
    },
    {
      who: 'the query service may not insert into events_all',
      as: users.query,
      sql: `INSERT INTO ${db}.events_all SELECT * FROM ${db}.events WHERE 0`,
      why: /readonly/i,
    },
    {
      who: 'the consumer may not read the keys',
      as: users.consumer,
      sql: `SELECT count() FROM ${sqlIdentifier(dbs.keys)}.access_keys`,
      why: /Access denied/i,
    },
    {
      who: 'the runner may not read the audit log',
      as: users.runner,
      sql: `SELECT count() FROM ${sqlIdentifier(dbs.audit)}.audit_log`,
      why: /Access denied/i,
    },
    {
      who: 'the interserver user may not read the keys',
      as: interserverUser,
      sql: `SELECT count() FROM ${sqlIdentifier(dbs.keys)}.access_keys`,
      why: /Access denied/i,
    },
    {
      who: 'the interserver user may not run DDL',
      as: interserverUser,
      sql: `CREATE TABLE ${db}.users_check_probe (a UInt8) ENGINE = Memory`,
      why: /DDL queries are prohibited/i,
    },
  ];
  let refusals = 0;
  for (const shard of shards) {
    const c = shard.find((s) => s.running);
    if (!c) {
      problems.push('a shard with no server running');
      continue;
    }
    // The control: the query user reads events there (a refusal below is not a failed login).
    const control = await ask(c.url, `SELECT count() FROM ${db}.events`, users.query);
    if (!control.ok) problems.push(`the query user could not read events on ${c.name}: ${control.text.slice(0, 200)}`);
    for (const p of probes) {
      const a = await ask(c.url, p.sql, p.as);
      if (refused(a, p.why)) refusals++;
      else problems.push(`${p.who}, yet on ${c.name}: ${a.ok ? 'allowed' : a.text.slice(0, 200)}`);
      if (a.ok && p.sql.startsWith('CREATE TABLE')) await ask(c.url, `DROP TABLE IF EXISTS ${db}.users_check_probe`);
    }
  }

  const seen = expected.map((u) => `${u} ${byUser.get(users[u].user) ?? 0}`).join(', ');
  const summary =
    `every service ran as its own ClickHouse user (queries in system.query_log: ${seen}; ` +
    `events inserted by ${users.consumer.user} only, its shards' parts as ${interserver}); the shards' part of ${secondary.reduce((n, r) => n + Number(r.n), 0)} ` +
    `distributed queries ran as ${interserver}; ${refusals} of ${probes.length * shards.length} forbidden statements refused ` +
    `on one server of each of the ${shards.length} shard(s) (the query service's INSERT into events among them)`;
  return { ok: problems.length === 0, summary, problems };
}
