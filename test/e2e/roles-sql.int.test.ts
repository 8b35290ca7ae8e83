import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { expect } from 'chai';
import pg from 'pg';
import { createLogger } from '@telemetry/platform';
import {
  PG_SERVICE_ROLE_NAMES,
  PG_SERVICE_ROLES,
  pgIsGranted,
  provisionFromEnv,
  DELETION_TABLES,
  REGISTRY_ENTITIES,
  type PgPrivilege,
  type PgServiceRole,
  type RegistryTable,
} from '@telemetry/store';
import { postgresTool } from '../../tools/devstack/installers.js';
import { withDatabase } from '../../tools/devstack/postgres.js';
import { passwordVariable, ROLES_SQL_FILE } from '../../tools/deploy/roles-sql.js';
import { registryOwnerUrl, serviceEnv } from '../support/fixtures.js';

const run = promisify(execFile);

const TABLES = [...Object.keys(REGISTRY_ENTITIES), 'registry_changes', ...DELETION_TABLES] as RegistryTable[];
const PRIVILEGES: PgPrivilege[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];

/** PostgreSQL's "permission denied" (insufficient_privilege). */
const DENIED = '42501';

/**
 * deploy/postgres/roles.sql, run with psql as docker-compose and the operations guide run
 * it, against a real server: after the provisioning step's migrations (DATABASE_URL as the
 * owner), each service's role logs in with its password and is refused every table and
 * privilege PG_SERVICE_ROLES does not give it.
 */
describe('deploy/postgres/roles.sql with psql on a real PostgreSQL', function () {
  this.timeout(120_000);
  // A database (and so roles) of this file's own: the run's roles stay untouched.
  const db = `roles_${randomBytes(4).toString('hex')}`;
  let adminUrl = '';
  const passwords = (tag: string): Record<PgServiceRole, string> =>
    Object.fromEntries(
      PG_SERVICE_ROLE_NAMES.map((s) => [s, `${s}-${tag}-${randomBytes(6).toString('hex')}`]),
    ) as Record<PgServiceRole, string>;
  const first = passwords('a');
  let psql = '';

  const rolesSql = (pw: Partial<Record<PgServiceRole, string>>) =>
    run(
      psql,
      [
        '-X',
        '-q',
        adminUrl,
        '-v',
        `db=${db}`,
        ...Object.entries(pw).flatMap(([s, p]) => ['-v', `${passwordVariable(s as PgServiceRole)}=${p}`]),
        '-f',
        ROLES_SQL_FILE,
      ],
      { maxBuffer: 4 * 1024 * 1024 },
    );

  const as = async <T>(service: PgServiceRole, password: string, fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: withDatabase(adminUrl, db, `${db}_${service}`, password) });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };

  const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };

  before(async () => {
    adminUrl = withDatabase(registryOwnerUrl(), 'postgres');
    psql = await postgresTool('psql');
    await admin((c) => c.query(`CREATE DATABASE ${db}`));
    // The provisioning step (compose's `provision`, the Kubernetes Job, npm run migrate):
    // ClickHouse and Kafka as the run set them up, PostgreSQL migrations as the owner.
    await provisionFromEnv(
      { ...serviceEnv(), LOG_LEVEL: 'warn', DATABASE_URL: withDatabase(adminUrl, db) },
      createLogger({ service: 'test', level: 'warn' }),
    );
  });

  after(async () => {
    await admin(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
      for (const s of PG_SERVICE_ROLE_NAMES) await c.query(`DROP ROLE IF EXISTS ${db}_${s}`);
    });
  });

  it('stops before touching anything when a password is missing', async () => {
    const { ingest, runner } = first;
    const err = await rolesSql({ ingest, runner }).then(
      () => undefined,
      (e: unknown) => e as Error & { stderr: string; code: number },
    );
    expect(err, 'psql exits with an error').to.be.instanceOf(Error);
    expect(err!.stderr).to.contain('set the password of the query role with -v query_password=');
    // Every variable is checked before anything is made.
    const made = await admin(
      async (c) =>
        (await c.query<{ rolname: string }>('SELECT rolname FROM pg_roles WHERE rolname LIKE $1', [`${db}\\_%`])).rows,
    );
    expect(made).to.deep.equal([]);
  });

  it('makes each role with its password, and each is refused what its service does not need', async () => {
    const { stdout } = await rolesSql(first);
    expect(stdout).to.contain(
      `PostgreSQL roles ${db}_ingest ${db}_runner ${db}_query ${db}_consumer are set for ${db}`,
    );
    for (const service of PG_SERVICE_ROLE_NAMES) {
      await as(service, first[service], async (c) => {
        for (const table of TABLES) {
          for (const privilege of PRIVILEGES) {
            const { rows } = await c.query<{ ok: boolean }>('SELECT has_table_privilege(current_user, $1, $2) AS ok', [
              table,
              privilege,
            ]);
            expect(rows[0]!.ok, `${service} ${privilege} ${table}`).to.equal(pgIsGranted(service, table, privilege));
          }
          // A real read: refused unless granted.
          const read = await c.query(`SELECT count(*) FROM ${table}`).then(
            () => 'ok',
            (e: { code?: string }) => e.code,
          );
          expect(read, `${service} reads ${table}`).to.equal(pgIsGranted(service, table, 'SELECT') ? 'ok' : DENIED);
        }
        const prune = await c.query(`SELECT prune_registry_changes(interval '1 day')`).then(
          () => 'ok',
          (e: { code?: string }) => e.code,
        );
        expect(prune, `${service} prunes the change log`).to.equal(
          (PG_SERVICE_ROLES[service].functions as readonly string[]).length > 0 ? 'ok' : DENIED,
        );
        // No role makes tables, roles or databases.
        const create = await c.query('CREATE TABLE intruder (x int)').then(
          () => 'ok',
          (e: { code?: string }) => e.code,
        );
        expect(create, `${service} creates a table`).to.equal(DENIED);
        const attrs = await c.query<Record<string, boolean>>(
          'SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication FROM pg_roles WHERE rolname = current_user',
        );
        expect(Object.values(attrs.rows[0]!), service).to.deep.equal([false, false, false, false]);
      });
    }
  });

  it('run again, it sets the new passwords (the old ones are refused) and keeps the grants', async () => {
    const second = passwords('b');
    await rolesSql(second);
    for (const service of PG_SERVICE_ROLE_NAMES) {
      const old = await as(service, first[service], () => Promise.resolve('ok')).catch(
        (e: { code?: string }) => e.code,
      );
      expect(old, `${service} with its old password`).to.equal('28P01'); // invalid_password
      const tables = await as(service, second[service], async (c) =>
        (
          await c.query<{ table_name: string }>(
            `SELECT DISTINCT table_name FROM information_schema.role_table_grants WHERE grantee = current_user ORDER BY 1`,
          )
        ).rows.map((r) => r.table_name),
      );
      expect(tables, service).to.deep.equal(
        (PG_SERVICE_ROLES[service].grants as readonly { table: string }[]).map((g) => g.table).sort(),
      );
    }
  });
});
