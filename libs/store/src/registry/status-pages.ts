import { STATUS_PAGE_LIMITS } from '@telemetry/contract';
import { AppError, type PgPool, type PgQueryable } from '@telemetry/platform';
import { storedStatusPageOf, type StoredStatusPage } from '../status-pages.js';
import { epochOf, registryCall, registryWrite, sqlState } from './pg.js';

interface Row {
  slug: string;
  tenant_id: string;
  version: string;
  title: string;
  description: string | null;
  monitor_ids: string[];
  c: string;
  u: string;
}

const COLUMNS = `slug, tenant_id, version, title, description, monitor_ids, ${epochOf('created_at')} AS c, ${epochOf('updated_at')} AS u`;

function decode(r: Row): StoredStatusPage {
  return storedStatusPageOf(r, r.c, r.u, r.version);
}

/** Inserts a page as it is (a taken slug: an error, or nothing when `skipTaken`); 1 when it was inserted. */
async function insertPage(tx: PgQueryable, p: StoredStatusPage, skipTaken: boolean): Promise<number> {
  const { rowCount } = await tx.query(
    `INSERT INTO status_pages (slug, tenant_id, version, title, description, monitor_ids, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7), to_timestamp($8))
     ${skipTaken ? 'ON CONFLICT (slug) DO NOTHING' : ''}`,
    [
      p.slug,
      p.tenant_id,
      p.version,
      p.title,
      p.description,
      p.monitor_ids,
      Math.floor(Date.parse(p.created_at) / 1000),
      Math.floor(Date.parse(p.updated_at) / 1000),
    ],
  );
  return rowCount ?? 0;
}

/**
 * Public status pages (docs/console.md) in PostgreSQL's `status_pages` table: the slug
 * is the primary key (unique across tenants, by the database), a tenant's page count is
 * checked inside the registry's write lock, and a change is conditional on the version it
 * was based on.
 */
export class StatusPageStore {
  constructor(private readonly db: PgPool) {}

  /** Every page of every tenant, in slug order, or those of these slugs. */
  async all(slugs?: readonly string[]): Promise<StoredStatusPage[]> {
    const { rows } = await registryCall(() =>
      slugs === undefined
        ? this.db.query<Row>(`SELECT ${COLUMNS} FROM status_pages ORDER BY slug`)
        : this.db.query<Row>(`SELECT ${COLUMNS} FROM status_pages WHERE slug = ANY($1::text[]) ORDER BY slug`, [slugs]),
    );
    return rows.map(decode);
  }

  async get(slug: string): Promise<StoredStatusPage | undefined> {
    return (await this.all([slug]))[0];
  }

  async ofTenant(tenantId: string): Promise<StoredStatusPage[]> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(`SELECT ${COLUMNS} FROM status_pages WHERE tenant_id = $1 ORDER BY slug`, [tenantId]),
    );
    return rows.map(decode);
  }

  /** Stores a new page: 409 SLUG_TAKEN when any tenant has the slug, 403 QUOTA_EXCEEDED past the tenant's limit. */
  async create(page: Omit<StoredStatusPage, 'version'>, version = 1): Promise<StoredStatusPage> {
    try {
      return await registryWrite(this.db, async (tx) => {
        const quota = STATUS_PAGE_LIMITS.maxPerTenant;
        const { rows } = await tx.query<{ n: string }>('SELECT count(*) AS n FROM status_pages WHERE tenant_id = $1', [
          page.tenant_id,
        ]);
        if (Number(rows[0]?.n ?? 0) >= quota) {
          throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} status pages`, { quota });
        }
        await insertPage(tx, { ...page, version }, false);
        return { ...page, version };
      });
    } catch (err) {
      if (sqlState(err) === '23505') throw new AppError('SLUG_TAKEN', `the slug ${page.slug} is taken; choose another`);
      throw err;
    }
  }

  /** Stores `next` if the page is still at `basedOn`; undefined when another change came first or it is gone. */
  async update(next: Omit<StoredStatusPage, 'version'>, basedOn: number): Promise<StoredStatusPage | undefined> {
    const { rows } = await registryWrite(this.db, (tx) =>
      tx.query<{ version: string }>(
        `UPDATE status_pages SET version = version + 1, title = $1, description = $2, monitor_ids = $3,
           updated_at = to_timestamp($4)
         WHERE slug = $5 AND tenant_id = $6 AND version = $7 RETURNING version`,
        [
          next.title,
          next.description,
          next.monitor_ids,
          Math.floor(Date.parse(next.updated_at) / 1000),
          next.slug,
          next.tenant_id,
          basedOn,
        ],
      ),
    );
    return rows[0] ? { ...next, version: Number(rows[0].version) } : undefined;
  }

  /** Deletes the page if it is still at `basedOn`. */
  async remove(slug: string, tenantId: string, basedOn: number): Promise<boolean> {
    const { rowCount } = await registryWrite(this.db, (tx) =>
      tx.query('DELETE FROM status_pages WHERE slug = $1 AND tenant_id = $2 AND version = $3', [
        slug,
        tenantId,
        basedOn,
      ]),
    );
    return rowCount === 1;
  }

  /** Stores pages copied from ClickHouse unless their slug is taken, inside the caller's registry write transaction; how many were new. */
  async insertMigratedIn(tx: PgQueryable, pages: readonly StoredStatusPage[]): Promise<number> {
    let n = 0;
    for (const p of pages) {
      n += await insertPage(tx, p, true);
    }
    return n;
  }
}
