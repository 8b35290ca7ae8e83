import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import pg from 'pg';
import type { Monitor, StatusPage } from '@telemetry/contract';
import { createLogger, createPostgres, type PgPool } from '@telemetry/platform';
import {
  createTenant,
  issueKey,
  migrateRegistry,
  MonitorStore,
  placeholderMonitor,
  sqlState,
  StatusPageStore,
} from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import { postgresTool } from '../../tools/devstack/installers.js';
import { provisionPostgres } from '../../tools/devstack/postgres.js';
import { eventually, runQuery, scratchDatabase, uid, type Running, type ScratchDatabase } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

const run = promisify(execFile);
const logger = createLogger({ service: 'test', level: 'silent' });

/**
 * Backups of the registry (docs/operations.md, "Backups of the registry"): a pg_dump in
 * custom format of a registry with a tenant, a key, monitors and a status page, restored
 * with pg_restore --no-owner --no-acl into a fresh database whose service roles get their
 * grants again; a query service on the restored database serves the monitor and the
 * status page to the old key, and writes (the change log's sequence and triggers came
 * back too). Real PostgreSQL and its own pg_dump / pg_restore.
 */
describe('registry backups: pg_dump, pg_restore into a fresh database, served from it (real PostgreSQL)', function () {
  this.timeout(120_000);
  const dbs: ScratchDatabase[] = [];
  const pools: PgPool[] = [];
  let dir = '';
  let query: Running | undefined;

  const poolOf = (url: string): PgPool => {
    const p = createPostgres({ databaseUrl: url, databasePoolMax: 2, databaseTimeoutMs: 10_000 }, logger, 'test');
    pools.push(p);
    return p;
  };

  after(async () => {
    await query?.stop();
    for (const p of pools) await p.end();
    for (const d of dbs) await d.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('restores a dump into a fresh database that a query service serves with the old key', async () => {
    const box = runSecretBox();
    const source = await scratchDatabase('backup');
    dbs.push(source);
    await provisionPostgres(source.adminUrl, source.database, logger);
    const db = poolOf(source.ownerUrl);
    const tenant = await createTenant(db, 'Backed Up');
    const { key } = await issueKey(db, {
      tenantId: tenant.tenant_id,
      kind: 'api',
      name: 'before the backup',
      scopes: ['checks:read', 'monitors:read', 'monitors:write'],
    });
    const monitorId = `mon_${randomBytes(8).toString('hex')}`;
    const monitors = new MonitorStore(db, box);
    await monitors.create(
      {
        ...placeholderMonitor(monitorId, 'backed up', tenant.tenant_id),
        headers: { Authorization: 'Bearer sealed-in-the-dump' },
      },
      10,
    );
    const slug = uid('backup');
    await new StatusPageStore(db).create({
      slug,
      tenant_id: tenant.tenant_id,
      title: 'Backed up status',
      description: null,
      monitor_ids: [monitorId],
      created_at: '2026-11-20T00:00:00Z',
      updated_at: '2026-11-20T00:00:00Z',
    });

    // The backup: custom format, as the owner.
    dir = mkdtempSync(join(tmpdir(), 'registry-backup-'));
    const file = join(dir, 'registry.dump');
    const dumpStarted = Date.now();
    await run(await postgresTool('pg_dump'), ['--format=custom', `--file=${file}`, `--dbname=${source.ownerUrl}`]);
    const dumpMs = Date.now() - dumpStarted;

    // The restore: a fresh database; objects owned by who restores (--no-owner), the dump's
    // grants left out (--no-acl: they name the source's roles), then the grants again.
    const target = await scratchDatabase('restored');
    dbs.push(target);
    const restoreStarted = Date.now();
    await run(await postgresTool('pg_restore'), [
      '--no-owner',
      '--no-acl',
      '--exit-on-error',
      `--dbname=${target.ownerUrl}`,
      file,
    ]);
    const restoreMs = Date.now() - restoreStarted;
    const restored = poolOf(target.ownerUrl);
    expect(await migrateRegistry(restored, logger), 'the schema came back at its version').to.deep.equal([]);
    // The service roles of the restored database, with pgGrantStatements, and PUBLIC's
    // EXECUTE on the change-log pruner taken back (a function's default; the dump's REVOKE was an ACL).
    const urls = await provisionPostgres(target.adminUrl, target.database, logger);
    await restored.query('REVOKE ALL ON FUNCTION prune_registry_changes(interval) FROM PUBLIC');

    // Each role holds what it held before, and no more.
    const as = async (url: string, sql: string): Promise<string | undefined> => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(sql);
        return undefined;
      } catch (err) {
        return sqlState(err);
      } finally {
        await c.end();
      }
    };
    expect(await as(urls.ingest, 'SELECT key_id FROM access_keys')).to.equal(undefined);
    expect(await as(urls.ingest, 'SELECT id FROM monitors'), 'ingest reads no monitors').to.equal('42501');
    expect(await as(urls.ingest, "SELECT prune_registry_changes('1 day')"), 'ingest prunes nothing').to.equal('42501');
    expect(await as(urls.query, "SELECT prune_registry_changes('1 day')")).to.equal(undefined);

    query = await runQuery({ DATABASE_URL: urls.query });
    const api = apiClient(query.url, key);
    const monitor = await eventually('the restored registry loaded', async () => {
      const r = await api<Monitor>('GET', `/api/monitors/${monitorId}`);
      return r.status === 200 ? r.body.data : undefined;
    });
    expect([monitor.name, monitor.headers]).to.deep.equal(['backed up', { Authorization: '****' }]);
    // The sealed secrets came back byte for byte: they still open.
    const open = (await new MonitorStore(restored, box).get(monitorId))!;
    expect(open.headers).to.deep.equal({ Authorization: 'Bearer sealed-in-the-dump' });
    const page = await api<StatusPage>('GET', `/api/status-pages/${slug}`);
    expect([page.status, page.body.data.title, page.body.data.monitor_ids]).to.deep.equal([
      200,
      'Backed up status',
      [monitorId],
    ]);
    expect((await fetch(`${query.url}/api/status/${slug}`)).status).to.equal(200);

    // Writes go on: the change log's sequence and its triggers were restored with the tables.
    const made = await api<Monitor>('POST', '/api/monitors', {
      name: 'after the restore',
      url: 'https://example.com/health',
      paused: true,
    });
    expect(made.status).to.equal(201);
    const listed = await eventually('the new monitor in the list', async () => {
      const r = await api<Monitor[]>('GET', '/api/monitors');
      return r.body.data.length === 2 ? r.body.data : undefined;
    });
    expect(listed.map((m) => m.name).sort()).to.deep.equal(['after the restore', 'backed up']);
    const { rows } = await restored.query<{ before: string; after: string }>(
      `SELECT (SELECT count(*) FROM registry_changes WHERE entity = 'monitors') AS after,
              (SELECT count(*) FROM registry_changes WHERE entity = 'monitors' AND id = $1) AS before`,
      [monitorId],
    );
    expect([Number(rows[0]!.before), Number(rows[0]!.after)]).to.deep.equal([1, 2]);

    process.stderr.write(
      `[backup] dump ${statSync(file).size} bytes in ${dumpMs} ms, restore in ${restoreMs} ms (1 tenant, 1 key, 1 monitor, 1 status page)\n`,
    );
  });
});
