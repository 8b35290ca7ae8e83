import { expect } from 'chai';
import {
  analystFileName,
  analystTenant,
  analystUserName,
  analystUsersXml,
  dropRowPolicyStatements,
  dropTenantCopyStatements,
  EVERYONE_POLICY,
  parseAnalystXml,
  refuseTakenUserName,
  reservedUserNames,
  rowPolicyStatements,
  SERVICE_USER_NAMES,
  TENANT_ANALYST_ROLLUPS,
  TENANT_ANALYST_TABLES,
  tenantCopyStatements,
  tenantDatabase,
  tenantRefreshStatements,
  viewSelect,
  withTenantFilter,
  xmlDefinesUser,
} from '@telemetry/store';

const HASH = 'a'.repeat(64);
const EPM_SELECT =
  'SELECT tenant_id, toStartOfMinute(toDateTime(id_time)) AS minute, source, category, uniqExactState(event_id) AS events FROM telemetry.events  GROUP BY tenant_id, minute, source, category';
const CHECKS_SELECT =
  'SELECT tenant_id, monitor_id, toStartOfHour(created_at) AS hour, status FROM telemetry.checks GROUP BY tenant_id, monitor_id, hour, status';

describe('tenant analysts: SQL and users.d XML', () => {
  const bad = ["ten_x'; DROP TABLE events; --", 'ten_A', 'tenant', 'ten_', `ten_${'a'.repeat(33)}`, 'ten_a b', ''];

  it('refuses every tenant id that is not ten_ and 1-32 of 0-9 a-z, before any SQL or XML is made', () => {
    for (const t of bad) {
      expect(() => analystTenant(t), t).to.throw(/not a tenant id/);
      expect(
        () => rowPolicyStatements({ data: 'telemetry', tenant: t, user: 'u', passwordSha256: HASH, others: [] }),
        t,
      ).to.throw();
      expect(() => tenantDatabase('telemetry', t), t).to.throw();
      expect(() => analystUsersXml({ user: 'u', tenant: t, data: 'telemetry', passwordSha256: HASH }), t).to.throw();
      expect(() => dropTenantCopyStatements({ data: 'telemetry', tenant: t }), t).to.throw();
    }
    expect(analystTenant('ten_0a9z')).to.equal('ten_0a9z');
  });

  it('refuses user names that are not plain identifiers, and databases that are not', () => {
    for (const n of ['a-b', 'a b', "x'", 'x`', '1abc', 'a'.repeat(65), '<u>']) {
      expect(() => analystUserName('telemetry', 'ten_a', n), n).to.throw(/not a user name/);
      expect(() => analystFileName(n), n).to.throw();
    }
    expect(analystUserName('telemetry', 'ten_a')).to.equal('telemetry_analyst_ten_a');
    expect(() =>
      rowPolicyStatements({ data: 'tele`metry', tenant: 'ten_a', user: 'u', passwordSha256: HASH, others: [] }),
    ).to.throw();
  });

  it('current ClickHouse: the user, one row policy per public table, the others kept reading everything, grants last', () => {
    const s = rowPolicyStatements({
      data: 'telemetry',
      tenant: 'ten_a',
      user: 'ana',
      passwordSha256: HASH,
      others: ['bob'],
    });
    expect(s[0]).to.equal(
      `CREATE USER OR REPLACE \`ana\` IDENTIFIED WITH sha256_hash BY '${HASH}' SETTINGS readonly = 1`,
    );
    for (const t of TENANT_ANALYST_TABLES) {
      expect(s).to.include(
        `CREATE ROW POLICY OR REPLACE \`tenant_analyst_ana\` ON \`telemetry\`.\`${t}\` AS permissive FOR SELECT USING tenant_id = 'ten_a' TO \`ana\``,
      );
      expect(s).to.include(
        `CREATE ROW POLICY OR REPLACE \`${EVERYONE_POLICY}\` ON \`telemetry\`.\`${t}\` AS permissive FOR SELECT USING 1 TO ALL EXCEPT \`ana\`, \`bob\``,
      );
      expect(s).to.include(`GRANT SELECT ON \`telemetry\`.\`${t}\` TO \`ana\``);
    }
    const firstGrant = s.findIndex((x) => x.startsWith('GRANT'));
    expect(s.slice(firstGrant).every((x) => x.startsWith('GRANT'))).to.equal(true);
    expect(s.some((x) => /INSERT|ALTER|audit|_keys|_registry/.test(x))).to.equal(false);
  });

  it('current ClickHouse: dropping the last tenant analyst drops the permissive policy, else keeps the others out of it', () => {
    const last = dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: ['ana'] });
    expect(last[0]).to.equal('DROP USER IF EXISTS `ana`');
    expect(last).to.include(`DROP ROW POLICY IF EXISTS \`${EVERYONE_POLICY}\` ON \`telemetry\`.\`events\``);
    const kept = dropRowPolicyStatements({ data: 'telemetry', user: 'ana', others: ['ana', 'bob'] });
    expect(kept).to.include(
      `CREATE ROW POLICY OR REPLACE \`${EVERYONE_POLICY}\` ON \`telemetry\`.\`events\` AS permissive FOR SELECT USING 1 TO ALL EXCEPT \`bob\``,
    );
  });

  it("18.16: the tenant's database of copies, each fed by a view with named columns and the tenant filter", () => {
    const { create, fill } = tenantCopyStatements({
      data: 'telemetry',
      tenant: 'ten_a',
      rollupSelect: (t) => (t === 'events_per_minute' ? EPM_SELECT : CHECKS_SELECT),
      columns: (t) => (t === 'events' ? ['tenant_id', 'event_id'] : ['tenant_id', 'x']),
    });
    expect(create[0]).to.equal('CREATE DATABASE IF NOT EXISTS `telemetry_tenant_ten_a`');
    expect(create).to.include('CREATE TABLE IF NOT EXISTS `telemetry_tenant_ten_a`.`events` AS `telemetry`.`events`');
    expect(create).to.include(
      "CREATE MATERIALIZED VIEW IF NOT EXISTS `telemetry`.`analyst_a_events` TO `telemetry_tenant_ten_a`.`events` AS SELECT `tenant_id`, `event_id` FROM `telemetry`.`events` WHERE tenant_id = 'ten_a'",
    );
    expect(create).to.include(
      "CREATE MATERIALIZED VIEW IF NOT EXISTS `telemetry`.`analyst_a_events_per_minute` TO `telemetry_tenant_ten_a`.`events_per_minute` AS SELECT tenant_id, toStartOfMinute(toDateTime(id_time)) AS minute, source, category, uniqExactState(event_id) AS events FROM telemetry.events  WHERE tenant_id = 'ten_a' GROUP BY tenant_id, minute, source, category",
    );
    expect(fill).to.include(
      "INSERT INTO `telemetry_tenant_ten_a`.`events` (`tenant_id`, `event_id`) SELECT `tenant_id`, `event_id` FROM `telemetry`.`events` WHERE tenant_id = 'ten_a'",
    );
    expect(fill).to.have.length(TENANT_ANALYST_TABLES.length);
    expect(Object.keys(TENANT_ANALYST_ROLLUPS).every((t) => TENANT_ANALYST_TABLES.includes(t))).to.equal(true);
    expect(() =>
      tenantCopyStatements({ data: 'telemetry', tenant: 'ten_a', rollupSelect: () => EPM_SELECT, columns: () => [] }),
    ).to.throw(/run the migrations/);
    expect(dropTenantCopyStatements({ data: 'telemetry', tenant: 'ten_a' }).at(-1)).to.equal(
      'DROP DATABASE IF EXISTS `telemetry_tenant_ten_a`',
    );
  });

  it("18.16: refresh empties each copy and fills it again from the data table, with the copy's columns", () => {
    const s = tenantRefreshStatements({
      data: 'telemetry',
      tenant: 'ten_a',
      tables: ['events'],
      columns: () => ['tenant_id', 'x'],
    });
    expect(s).to.deep.equal([
      'TRUNCATE TABLE IF EXISTS `telemetry_tenant_ten_a`.`events`',
      "INSERT INTO `telemetry_tenant_ten_a`.`events` (`tenant_id`, `x`) SELECT `tenant_id`, `x` FROM `telemetry`.`events` WHERE tenant_id = 'ten_a'",
    ]);
    expect(() => tenantRefreshStatements({ data: 'telemetry', tenant: "ten_a'", columns: () => ['x'] })).to.throw(
      /not a tenant id/,
    );
    expect(() => tenantRefreshStatements({ data: 'telemetry', tenant: 'ten_a', columns: () => ['x`y'] })).to.throw();
  });

  it('18.16: a rollup view of any other shape is refused rather than guessed at', () => {
    const f = (s: string) => withTenantFilter(s, '`telemetry`.`events`', 'telemetry', 'events', "'ten_a'");
    expect(() => f('SELECT 1 FROM telemetry.other GROUP BY x')).to.throw(/unexpected/);
    expect(() => f('SELECT 1 FROM telemetry.events WHERE 1 GROUP BY x')).to.throw(/unexpected/);
    expect(() => f('SELECT 1 FROM telemetry.events')).to.throw(/unexpected/);
    expect(viewSelect('CREATE MATERIALIZED VIEW a.b TO a.c ( x UInt8) AS SELECT x FROM a.d')).to.equal(
      'SELECT x FROM a.d',
    );
    expect(() => viewSelect('CREATE TABLE a.b (x UInt8) ENGINE = Memory')).to.throw(/not a view/);
  });

  it("18.16: the users.d file allows only the tenant's database, read-only, the password hashed, and reads back", () => {
    const text = analystUsersXml({
      user: 'ana',
      tenant: 'ten_a',
      data: 'telemetry',
      passwordSha256: HASH,
      networks: ['10.0.0.0/8', '<x>&'],
    });
    expect(text).to.include('<allow_databases><database>telemetry_tenant_ten_a</database></allow_databases>');
    expect(text).to.include(`<password_sha256_hex>${HASH}</password_sha256_hex>`);
    expect(text).to.include('<profile>tenant_analyst</profile>');
    expect(text).to.include('<tenant_analyst><readonly>1</readonly></tenant_analyst>');
    expect(text).to.include('<ip>&#60;x&#62;&#38;</ip>');
    expect(text).not.to.include('<password>');
    expect(parseAnalystXml(text)).to.deep.equal({ user: 'ana', tenant: 'ten_a', data: 'telemetry' });
    expect(parseAnalystXml('<yandex/>')).to.equal(undefined);
    expect(() =>
      analystUsersXml({ user: 'ana', tenant: 'ten_a', data: 'telemetry', passwordSha256: 'secret' }),
    ).to.throw();
    expect(analystFileName('ana')).to.equal('analyst-ana.xml');
  });
  it("current ClickHouse: only the password's SHA-256 is sent (sha256_hash), never the password", () => {
    const s = rowPolicyStatements({
      data: 'telemetry',
      tenant: 'ten_a',
      user: 'ana',
      passwordSha256: HASH,
      others: [],
    });
    expect(s[0]).to.match(/IDENTIFIED WITH sha256_hash BY 'a{64}'/);
    expect(s.some((x) => /sha256_password|plaintext/.test(x))).to.equal(false);
    for (const bad of ['secret', 'A'.repeat(64), `${HASH}'`]) {
      expect(() =>
        rowPolicyStatements({ data: 'telemetry', tenant: 'ten_a', user: 'ana', passwordSha256: bad, others: [] }),
      ).to.throw(/64 hex/);
    }
  });

  it('refuses a name that is a service user, the admin, default, or any existing user that is not a tenant analyst', () => {
    const base = { tenant: 'ten_a', data: 'telemetry', admin: 'telemetry', exists: true };
    for (const user of [
      'default',
      'telemetry',
      'analyst',
      ...SERVICE_USER_NAMES,
      ...SERVICE_USER_NAMES.map((x) => `telemetry_${x}`),
    ]) {
      expect(() => refuseTakenUserName({ ...base, user, analyst: { tenant: 'ten_a' } }), user).to.throw(/user of ours/);
      expect(reservedUserNames('telemetry', 'telemetry')).to.include(user);
    }
    expect(() => refuseTakenUserName({ ...base, user: 'bob' })).to.throw(/already exists and is not a tenant analyst/);
    expect(() => refuseTakenUserName({ ...base, user: 'bob', analyst: { tenant: 'ten_b' } })).to.throw(
      /another tenant/,
    );
    // Rotation of one of ours, and a new name, are allowed.
    refuseTakenUserName({ ...base, user: 'bob', analyst: { tenant: 'ten_a' } });
    refuseTakenUserName({ ...base, user: 'carol', exists: false });
  });

  it('18.16: finds a user defined in any users file, not in comments nor outside <users>', () => {
    const file = `<?xml version="1.0"?>
<yandex>
  <profiles><bob><readonly>1</readonly></bob></profiles>
  <!-- <users><carol/></users> -->
  <users>
    <telemetry_consumer><password_sha256_hex>${HASH}</password_sha256_hex></telemetry_consumer>
    <dave/>
  </users>
</yandex>`;
    expect(xmlDefinesUser(file, 'telemetry_consumer')).to.equal(true);
    expect(xmlDefinesUser(file, 'dave')).to.equal(true);
    expect(xmlDefinesUser(file, 'telemetry')).to.equal(false);
    expect(xmlDefinesUser(file, 'bob')).to.equal(false);
    expect(xmlDefinesUser(file, 'carol')).to.equal(false);
    expect(() => xmlDefinesUser(file, 'a.*')).to.throw(/not a user name/);
  });
});
