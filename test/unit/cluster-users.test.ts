import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { grantStatements, isGranted, SERVICE_USER_NAMES } from '@telemetry/store';
import { clickhouseClusterXml, clickhouseConfig } from '../../tools/devstack/server-config.js';
import {
  clusterUsersXml,
  interserverUsersXml,
  newClusterUsers,
  serviceUserEntries,
  usersXml,
} from '../../tools/devstack/users.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

/** name -> { hash, profile, databases } of a users.d file. */
function parseUsers(xml: string): Map<string, { hash: string; profile: string; databases: string[] }> {
  const out = new Map<string, { hash: string; profile: string; databases: string[] }>();
  for (const [, name, body] of xml.matchAll(/^ {4}<(\w+)>(.*)<\/\1>$/gm)) {
    out.set(name!, {
      hash: /<password_sha256_hex>([0-9a-f]{64})<\/password_sha256_hex>/.exec(body!)![1]!,
      profile: /<profile>(\w+)<\/profile>/.exec(body!)![1]!,
      databases: [...body!.matchAll(/<database>(\w+)<\/database>/g)].map((m) => m[1]!),
    });
  }
  return out;
}

describe('the cluster harness users (unit)', () => {
  it('writes every service user and the migrator, passwords hashed, each limited to its databases', () => {
    const users = newClusterUsers('cl_db');
    const xml = clusterUsersXml('cl_db', users);
    const parsed = parseUsers(xml);
    expect([...parsed.keys()].sort()).to.deep.equal(
      [...SERVICE_USER_NAMES.map((u) => `cl_db_${u}`), 'cl_db_migrator'].sort(),
    );
    for (const u of [...SERVICE_USER_NAMES, 'migrator'] as const) {
      const p = parsed.get(users[u].user)!;
      expect(p.hash, u).to.equal(sha(users[u].password));
      expect(xml, `${u}'s password in the clear`).not.to.include(users[u].password);
      expect(p.databases.length, u).to.be.greaterThan(0);
    }
    // The same users and limits as on one server (writeUsersFile).
    for (const e of serviceUserEntries('cl_db', users)) {
      expect(parsed.get(e.name)!.profile).to.equal(e.profile);
      expect(parsed.get(e.name)!.databases).to.deep.equal(e.databases);
    }
    expect(parsed.get('cl_db_query')).to.include({ profile: 'svc_reader' });
    expect(parsed.get('cl_db_query')!.databases).to.deep.equal(['cl_db', 'cl_db_audit']);
    expect(parsed.get('cl_db_audit')).to.deep.include({ profile: 'svc_writer', databases: ['cl_db_audit'] });
    expect(parsed.get('cl_db_consumer')).to.deep.include({ profile: 'default', databases: ['cl_db'] });
    // The migrator runs DDL (ON CLUSTER) on the data database, its siblings and `default` only.
    expect(parsed.get('cl_db_migrator')).to.deep.include({
      profile: 'default',
      databases: ['default', 'cl_db', 'cl_db_registry', 'cl_db_keys', 'cl_db_audit'],
    });
  });

  it('gives the interserver user the data and audit databases, no DDL, and never every database', () => {
    const me = { user: 'interserver', password: 'abc123' };
    const none = parseUsers(interserverUsersXml(me, [])).get('interserver')!;
    expect(none.databases).to.deep.equal(['system']);
    const two = parseUsers(interserverUsersXml(me, ['a_db', 'b_db'])).get('interserver')!;
    expect(two).to.deep.equal({
      hash: sha('abc123'),
      profile: 'svc_writer',
      databases: ['a_db', 'a_db_audit', 'b_db', 'b_db_audit'],
    });
  });

  it('refuses names that are not plain identifiers and users with no database', () => {
    expect(() => usersXml([{ name: 'x></users><y', password: 'p', profile: 'default', databases: ['d'] }])).to.throw(
      /plain identifier/,
    );
    expect(() => usersXml([{ name: 'x', password: 'p', profile: 'default', databases: ['d</database>'] }])).to.throw(
      /plain identifier/,
    );
    expect(() => usersXml([{ name: 'x', password: 'p', profile: 'default', databases: [] }])).to.throw(/no databases/);
    expect(() => newClusterUsers('bad-name')).to.throw(/plain identifier/);
  });

  it('names the interserver user in every replica of remote_servers', () => {
    const xml = clickhouseClusterXml([2181], { shard: 1, replica: 'ch1', interserverPort: 9009 }, [[9001, 9002]], {
      user: 'interserver',
      password: 'f00d',
    });
    const replicas = [...xml.matchAll(/<replica>(<host>.*?)<\/replica>/g)].map((m) => m[1]);
    expect(replicas).to.deep.equal([
      '<host>127.0.0.1</host><port>9001</port><user>interserver</user><password>f00d</password>',
      '<host>127.0.0.1</host><port>9002</port><user>interserver</user><password>f00d</password>',
    ]);
    expect(clickhouseClusterXml([2181], { shard: 1, replica: 'ch1', interserverPort: 9009 }, [[9001]])).not.to.include(
      '<user>',
    );
    expect(() =>
      clickhouseClusterXml([2181], { shard: 1, replica: 'ch1', interserverPort: 9009 }, [[9001]], {
        user: 'a',
        password: '</password>',
      }),
    ).to.throw();
  });

  it('keeps system.query_log with every profile logging its queries when asked', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ch-config-'));
    try {
      clickhouseConfig(dir, 8123, 9000, '', { logQueries: true });
      expect(readFileSync(join(dir, 'config.xml'), 'utf8')).to.include('<query_log><database>system</database>');
      const users = readFileSync(join(dir, 'users.xml'), 'utf8');
      for (const p of ['default', 'svc_reader', 'svc_writer'])
        expect(users).to.match(new RegExp(`<${p}>[^\\n]*<log_queries>1</log_queries></${p}>`));
      clickhouseConfig(dir, 8123, 9000);
      expect(readFileSync(join(dir, 'config.xml'), 'utf8')).not.to.include('query_log');
      expect(readFileSync(join(dir, 'users.xml'), 'utf8')).not.to.include('log_queries');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQL users on a cluster (unit)', () => {
  const statements = (onCluster?: string) =>
    grantStatements({ db: (r) => (r === 'data' ? 'd' : `d_${r}`), name: (u) => u, password: () => "'p'", onCluster });

  it('grants each table a grant names and its Distributed _all table (data and audit databases)', () => {
    const runner = statements().find((u) => u.user === 'runner')!.statements;
    expect(runner).to.include.members([
      'GRANT SELECT ON d.checks TO runner',
      'GRANT SELECT ON d.checks_all TO runner',
      'GRANT SELECT ON d.alerts_all TO runner',
    ]);
    const audit = statements().find((u) => u.user === 'audit')!.statements;
    expect(audit).to.include('GRANT INSERT ON d_audit.audit_log_all TO audit');
    // The legacy keys database is never sharded.
    const ingest = statements().find((u) => u.user === 'ingest')!.statements;
    expect(ingest.filter((s) => s.startsWith('GRANT'))).to.deep.equal(['GRANT SELECT ON d_keys.access_keys TO ingest']);
    expect(isGranted('runner', 'data', 'checks_all', 'SELECT')).to.equal(true);
    expect(isGranted('runner', 'data', 'checks_all', 'INSERT')).to.equal(false);
    expect(isGranted('runner', 'data', 'events_all', 'SELECT')).to.equal(false);
    expect(isGranted('query', 'data', 'events_all', 'SELECT')).to.equal(true);
  });

  it('makes every user and grant ON CLUSTER when asked', () => {
    const all = statements(' ON CLUSTER `telemetry`').flatMap((u) => u.statements);
    expect(all.length).to.be.greaterThan(SERVICE_USER_NAMES.length);
    for (const s of all) expect(s).to.match(/^(CREATE USER OR REPLACE \w+|GRANT) ON CLUSTER `telemetry` /);
    expect(
      statements()
        .flatMap((u) => u.statements)
        .join('\n'),
    ).not.to.include('ON CLUSTER');
  });
});
