import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { PG_SERVICE_ROLE_NAMES, PG_SERVICE_ROLES, type PgRoleGrant } from '@telemetry/store';
import { passwordVariable, ROLES_SQL_FILE, rolesSql } from '../../tools/deploy/roles-sql.js';

describe('PostgreSQL roles file (unit)', () => {
  it(`${ROLES_SQL_FILE} is made from PG_SERVICE_ROLES (npm run docs)`, () => {
    expect(readFileSync(ROLES_SQL_FILE, 'utf8'), `run npm run docs to refresh ${ROLES_SQL_FILE}`).to.equal(rolesSql());
  });

  it(`${ROLES_SQL_FILE} makes each service's role with its password and exactly its grants`, () => {
    const text = readFileSync(ROLES_SQL_FILE, 'utf8');
    for (const service of PG_SERVICE_ROLE_NAMES) {
      const role = `:"${service}_role"`;
      expect(text).to.contain(`\\set ${service}_role :db _${service}\n`);
      expect(text).to.contain(`ALTER ROLE ${role} LOGIN NOSUPERUSER`);
      expect(text).to.contain(`PASSWORD :'${passwordVariable(service)}';`);
      // What the file grants this role, table by table, after revoking everything.
      const granted = [...text.matchAll(/^GRANT (SELECT[A-Z, ]*) ON ([a-z_]+) TO (:"[a-z]+_role");$/gm)]
        .filter((m) => m[3] === role)
        .map((m) => ({ table: m[2], privileges: m[1]!.split(', ') }));
      expect(granted, service).to.deep.equal(
        (PG_SERVICE_ROLES[service].grants as readonly PgRoleGrant[]).map((g) => ({
          table: g.table,
          privileges: [...g.privileges],
        })),
      );
      expect(text).to.match(new RegExp(`^REVOKE ALL ON [a-z_, ]+ FROM ${role};$`, 'm'));
    }
    // Nothing is spliced: the database and the passwords are psql variables, quoted by psql.
    expect(text).not.to.match(/telemetry_(ingest|runner|query)/);
    expect(text).to.contain('GRANT CONNECT ON DATABASE :"db" TO');
  });
});
