/**
 * npm run keys -- create --kind telemetry --name "my shop" [--origins https://a,https://b] [--sources web,app]
 * npm run keys -- create --kind api --name "dashboards" [--scopes checks:read] [--monitors m1,m2]
 * npm run keys -- revoke <key_id>
 * npm run keys -- list
 *
 * Talks to ClickHouse at CLICKHOUSE_URL (or the stack `npm start` runs). Prints a new
 * key's secret once; only its SHA-256 is stored. Services pick up changes within
 * KEY_REFRESH_MS, without a restart.
 */
import { parseArgs } from 'node:util';
import { createClickHouse } from '@telemetry/platform';
import { ClickHouseKeySource, issueKey, revokeKey, SCOPES, type KeyKind } from '@telemetry/store';
import { envWithLocalStack } from './local-env.js';

const out = (s: string): boolean => process.stdout.write(`${s}\n`);

async function main(): Promise<number> {
  const env = envWithLocalStack();
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      kind: { type: 'string' },
      name: { type: 'string' },
      scopes: { type: 'string' },
      monitors: { type: 'string' },
      origins: { type: 'string' },
      sources: { type: 'string' },
    },
  });
  const [cmd, arg] = positionals;
  if (!env.CLICKHOUSE_URL) {
    process.stderr.write('CLICKHOUSE_URL is not set and no stack from `npm start` was found\n');
    return 2;
  }
  const database = env.CLICKHOUSE_DATABASE ?? 'telemetry';
  const client = createClickHouse({
    url: env.CLICKHOUSE_URL,
    username: env.CLICKHOUSE_USER ?? 'default',
    password: env.CLICKHOUSE_PASSWORD ?? '',
    database,
  });
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
      const { key, record } = await issueKey(client, database, {
        kind,
        name: values.name ?? kind,
        scopes: list(values.scopes),
        monitorIds: list(values.monitors),
        allowedOrigins: list(values.origins),
        allowedSources: list(values.sources),
      });
      out(`key_id: ${record.key_id}`);
      out(`key:    ${key}`);
      out('(the key is shown once; only its hash is stored)');
      return 0;
    }
    if (cmd === 'revoke' && arg) {
      if (await revokeKey(client, database, arg)) {
        out(`revoked ${arg}`);
        return 0;
      }
      process.stderr.write(`no key with id ${arg}\n`);
      return 1;
    }
    if (cmd === 'list') {
      for (const r of await new ClickHouseKeySource(client, database).loadAll()) {
        out(
          [r.key_id, r.kind, r.revoked ? 'revoked' : 'active', JSON.stringify(r.name), r.scopes.join(',') || '-'].join(
            '\t',
          ),
        );
      }
      return 0;
    }
    process.stderr.write(
      `usage: keys create --kind telemetry|api --name NAME [--scopes ${SCOPES.join(',')}] [--monitors ..] [--origins ..] [--sources ..]\n       keys revoke KEY_ID\n       keys list\n`,
    );
    return 2;
  } finally {
    await client.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`keys: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
