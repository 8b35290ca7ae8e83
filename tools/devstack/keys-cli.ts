/**
 * npm run keys -- create --tenant ten_… --kind telemetry --name "my shop" [--origins https://a,https://b] [--sources web,app] [--expires-in 90d] [--ip-storage full|truncated|none]
 * npm run keys -- create --tenant ten_… --kind api --name "dashboards" [--scopes checks:read] [--monitors m1,m2] [--expires-in 90d]
 * npm run keys -- revoke <key_id>
 * npm run keys -- ip-storage <key_id> full|truncated|none
 * npm run keys -- list [--tenant ten_…]
 *
 * Talks to the registry (PostgreSQL) at DATABASE_URL, as the database's owner (or the
 * stack `npm start` runs). Prints a new key's secret once; only its SHA-256 is stored.
 * Every replica of every service picks up a change within a second (the change feed).
 */
import { parseArgs } from 'node:util';
import {
  DEFAULT_IP_STORAGE,
  expiryMs,
  isIpStorage,
  loadKeyRecords,
  findTenant,
  issueKey,
  parseDuration,
  revokeKey,
  SCOPES,
  setTenantKeyIpStorage,
  type KeyKind,
} from '@telemetry/store';
import { registryFromEnv, runCli } from './cli.js';

const out = (s: string): boolean => process.stdout.write(`${s}\n`);

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      kind: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      monitors: { type: 'string' },
      origins: { type: 'string' },
      sources: { type: 'string' },
      tenant: { type: 'string' },
      'expires-in': { type: 'string' },
      'ip-storage': { type: 'string' },
    },
  });
  const [cmd, arg, arg2] = positionals;
  const db = registryFromEnv();
  if (!db) return 2;
  const list = (s: string | undefined): string[] | undefined =>
    s === undefined
      ? undefined
      : s
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean);
  try {
    if (cmd === 'create') {
      const kind = values.kind as KeyKind | undefined;
      if (kind !== 'telemetry' && kind !== 'api') throw new Error('--kind telemetry|api is required');
      if (values.tenant === undefined) throw new Error('--tenant ten_… is required (npm run tenants -- list)');
      const tenant = await findTenant(db, values.tenant);
      if (!tenant) throw new Error(`no tenant ${values.tenant} (npm run tenants -- list)`);
      const expiresIn = values['expires-in'];
      const expiresInSeconds = expiresIn === undefined ? undefined : parseDuration(expiresIn);
      if (expiresIn !== undefined && expiresInSeconds === undefined) {
        throw new Error('--expires-in is a number and a unit: 90d, 12h, 30m or 3600s');
      }
      const ipStorage = values['ip-storage'];
      if (ipStorage !== undefined && (kind !== 'telemetry' || !isIpStorage(ipStorage))) {
        throw new Error('--ip-storage full|truncated|none is for telemetry keys (docs/enrichment.md)');
      }
      const { key, record } = await issueKey(db, {
        tenantId: tenant.tenant_id,
        expiresInSeconds,
        kind,
        name: values.name ?? kind,
        scopes: list(values.scopes),
        monitorIds: list(values.monitors),
        allowedOrigins: list(values.origins),
        allowedSources: list(values.sources),
        ...(ipStorage !== undefined ? { ipStorage } : {}),
      });
      out(`key_id: ${record.key_id}`);
      out(`tenant: ${record.tenant_id}`);
      if (record.expires_at) out(`expires_at: ${record.expires_at.replace(' ', 'T')}Z`);
      out(`key:    ${key}`);
      out('(the key is shown once; only its hash is stored)');
      return 0;
    }
    if (cmd === 'revoke' && arg) {
      if (await revokeKey(db, arg)) {
        out(`revoked ${arg}`);
        return 0;
      }
      process.stderr.write(`no key with id ${arg}\n`);
      return 1;
    }
    if (cmd === 'ip-storage' && arg) {
      if (!isIpStorage(arg2)) throw new Error('usage: keys ip-storage KEY_ID full|truncated|none');
      const changed = await setTenantKeyIpStorage(db, undefined, arg, arg2);
      if (!changed) {
        process.stderr.write(`no key with id ${arg}\n`);
        return 1;
      }
      if (changed.before.kind !== 'telemetry') throw new Error('only telemetry keys send events: ip_storage is theirs');
      out(`${arg} ip_storage: ${changed.before.ip_storage ?? DEFAULT_IP_STORAGE} -> ${arg2}`);
      return 0;
    }
    if (cmd === 'list') {
      const now = Date.now();
      for (const r of await loadKeyRecords(db)) {
        if (values.tenant !== undefined && r.tenant_id !== values.tenant) continue;
        const expired = expiryMs(r.expires_at) <= now;
        const state = r.revoked ? 'revoked' : expired ? 'expired' : 'active';
        out(
          [
            r.key_id,
            r.tenant_id,
            r.kind,
            state,
            JSON.stringify(r.name),
            r.scopes.join(',') || '-',
            // What a telemetry key keeps of addresses (docs/enrichment.md); an API key sends no events.
            r.kind === 'telemetry' ? `ip_storage=${r.ip_storage ?? DEFAULT_IP_STORAGE}` : '-',
          ].join('\t'),
        );
      }
      return 0;
    }
    process.stderr.write(
      `usage: keys create --tenant TENANT_ID --kind telemetry|api --name NAME [--scopes ${SCOPES.join(',')}] [--monitors ..] [--origins ..] [--sources ..] [--expires-in 90d] [--ip-storage full|truncated|none]\n       keys revoke KEY_ID\n       keys ip-storage KEY_ID full|truncated|none\n       keys list [--tenant TENANT_ID]\n`,
    );
    return 2;
  } finally {
    await db.end();
  }
}

runCli('keys', main);
