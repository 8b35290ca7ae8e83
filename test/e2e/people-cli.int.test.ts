import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createTenant, personByEmail, roleIn, verifyPassword } from '@telemetry/store';
import { adminRegistry, registryOwnerUrl, uid } from '../support/fixtures.js';

const run = promisify(execFile);

/** `npm run people` (tools/devstack/people-cli.ts) as a child process against the run's registry, as its owner. */
describe('npm run people: the operator makes a tenant’s first owner (real PostgreSQL)', function () {
  this.timeout(60_000);

  const people = async (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
    try {
      const { stdout, stderr } = await run(
        'npx',
        ['tsx', '--conditions=source', 'tools/devstack/people-cli.ts', ...args],
        { env: { ...process.env, DATABASE_URL: registryOwnerUrl() }, timeout: 30_000 },
      );
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  it('create-owner makes the person and the owner membership, prints a strong password once; list shows them', async () => {
    const tenant = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const email = `${uid('Alice')}@Example.test`;
    const made = await people('create-owner', '--tenant', tenant, '--email', email, '--name', 'Alice');
    expect(made.code, made.stderr).to.equal(0);
    const password = /^password: (\S+)$/m.exec(made.stdout)?.[1];
    expect(password, made.stdout).to.match(/^[A-Za-z0-9_-]{24}$/);
    expect(made.stdout).to.contain('change it in the console, Account');
    const person = (await personByEmail(adminRegistry(), email))!;
    expect(person).to.deep.include({ email: email.toLowerCase(), name: 'Alice' });
    expect(await verifyPassword(person.password_hash, password!)).to.equal(true);
    expect(await roleIn(adminRegistry(), tenant, person.id)).to.equal('owner');

    // Again: the same person, still owner, the password kept (and not printed).
    const again = await people('create-owner', '--tenant', tenant, '--email', email);
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stdout).to.contain('password: unchanged').and.not.contain(password!);
    expect(await verifyPassword((await personByEmail(adminRegistry(), email))!.password_hash, password!)).to.equal(
      true,
    );

    const list = await people('list', '--tenant', tenant);
    expect(list.code, list.stderr).to.equal(0);
    expect(list.stdout.trim().split('\n')).to.have.length(1);
    expect(list.stdout).to.contain(`${person.id}\t${email.toLowerCase()}\towner\t"Alice"`);
  });

  it('refuses an unknown tenant, a bad email and a missing argument, changing nothing', async () => {
    const tenant = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const unknown = await people('create-owner', '--tenant', 'ten_doesnotexist', '--email', 'a@example.test');
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.contain('no tenant ten_doesnotexist');
    const bad = await people('create-owner', '--tenant', tenant, '--email', 'not an email');
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('is not an email address');
    expect((await people('create-owner', '--tenant', tenant)).code).to.equal(1);
    expect((await people('nonsense')).code).to.equal(2);
    expect((await people('list', '--tenant', tenant)).stdout).to.equal('');
  });
});
