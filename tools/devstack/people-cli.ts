/**
 * npm run people -- create-owner --tenant ten_… --email alice@example.com [--name "Alice"]
 * npm run people -- list --tenant ten_…
 *
 * Talks to the registry (PostgreSQL) at DATABASE_URL, as the database's owner (or the
 * stack `npm start` runs), as `npm run keys` does. `create-owner` makes the person when
 * there is none and makes them an owner of the tenant; a person without a password gets a
 * random strong one, printed once (docs/access.md, "People and memberships").
 */
import { parseArgs } from 'node:util';
import { ACCESS_LIMITS, EMAIL_PATTERN } from '@telemetry/contract';
import { ensureOwner, findTenant, listMembers } from '@telemetry/store';
import { registryFromEnv, runCli } from './cli.js';

const out = (s: string): boolean => process.stdout.write(`${s}\n`);
const USAGE =
  'usage: people create-owner --tenant TENANT_ID --email EMAIL [--name NAME]\n       people list --tenant TENANT_ID\n';

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { tenant: { type: 'string' }, email: { type: 'string' }, name: { type: 'string' } },
  });
  const [cmd] = positionals;
  if (cmd !== 'create-owner' && cmd !== 'list') {
    process.stderr.write(USAGE);
    return 2;
  }
  if (values.tenant === undefined) throw new Error('--tenant ten_… is required (npm run tenants -- list)');
  const email = values.email?.trim();
  if (cmd === 'create-owner') {
    if (email === undefined) throw new Error('--email is required');
    if (email.length > ACCESS_LIMITS.maxEmailLength || !new RegExp(EMAIL_PATTERN).test(email))
      throw new Error(`--email ${JSON.stringify(email)} is not an email address`);
    if ((values.name ?? '').length > ACCESS_LIMITS.maxNameLength)
      throw new Error(`--name has at most ${ACCESS_LIMITS.maxNameLength} characters`);
  }
  const db = registryFromEnv();
  if (!db) return 2;
  try {
    const tenant = await findTenant(db, values.tenant);
    if (!tenant) throw new Error(`no tenant ${values.tenant} (npm run tenants -- list)`);
    if (cmd === 'list') {
      for (const m of await listMembers(db, tenant.tenant_id))
        out([m.id, m.email, m.role, JSON.stringify(m.name), m.joined_at].join('\t'));
      return 0;
    }
    const made = await ensureOwner(db, { tenantId: tenant.tenant_id, email: email!, name: values.name });
    out(`person: ${made.person.id} ${made.person.email}${made.createdPerson ? ' (new)' : ''}`);
    out(`owner of: ${tenant.tenant_id} (${tenant.name})`);
    if (made.password !== undefined) {
      out(`password: ${made.password}`);
      out('(shown once; sign in to the console with it and change it in the console, Account)');
    } else out('password: unchanged (they sign in as before)');
    return 0;
  } finally {
    await db.end();
  }
}

runCli('people', main);
