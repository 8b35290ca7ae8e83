/**
 * npm run tenants -- create --name "Acme"     prints `tenant_id: ten_…`
 * npm run tenants -- list                      one line per tenant: id, created, name
 *
 * Talks to the registry (PostgreSQL) at DATABASE_URL, as the database's owner (or the
 * stack `npm start` runs). A tenant's keys
 * are then issued with `npm run keys -- create --tenant ten_… …` (docs/operations.md).
 */
import { parseArgs } from 'node:util';
import { createTenant, listTenants } from '@telemetry/store';
import { registryFromEnv, runCli } from './cli.js';

const out = (s: string): boolean => process.stdout.write(`${s}\n`);

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { name: { type: 'string' } } });
  const [cmd] = positionals;
  if (cmd !== 'create' && cmd !== 'list') {
    process.stderr.write('usage: tenants create --name NAME\n       tenants list\n');
    return 2;
  }
  if (cmd === 'create' && values.name === undefined) throw new Error('--name NAME is required');
  const db = registryFromEnv();
  if (!db) return 2;
  try {
    if (cmd === 'create') {
      const t = await createTenant(db, values.name!);
      out(`tenant_id: ${t.tenant_id}`);
      out(`name:      ${t.name}`);
      return 0;
    }
    for (const t of await listTenants(db)) {
      out([t.tenant_id, t.created_at, JSON.stringify(t.name)].join('\t'));
    }
    return 0;
  } finally {
    await db.end();
  }
}

runCli('tenants', main);
