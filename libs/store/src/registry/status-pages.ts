import { STATUS_PAGE_LIMITS } from '@telemetry/contract';
import { AppError, type PgClient, type PgPool, type PgQueryable } from '@telemetry/platform';
import { storedStatusPageOf, type StoredStatusPage } from '../status-pages.js';
import { epochOf, registryCall, registryWrite, sqlState } from './pg.js';
import { setConfigKeyIn } from './config-key-taken.js';

interface Row {
  slug: string;
  tenant_id: string;
  version: string;
  title: string;
  description: string | null;
  monitor_ids: string[];
  config_key: string | null;
  c: string;
  u: string;
}

const COLUMNS = `slug, tenant_id, version, title, description, monitor_ids, config_key, ${epochOf('created_at')} AS c, ${epochOf('updated_at')} AS u`;

function decode(r: Row): StoredStatusPage {
  return storedStatusPageOf({ ...r, key: r.config_key }, r.c, r.u, r.version);
}

/** A page to store: its `key` may be left out (none). */
export type NewStatusPage = Omit<StoredStatusPage, 'version' | 'key'> & { key?: string | null };

/** The unique index on (tenant_id, config_key) (registry migration 9). */
const KEY_INDEX = 'status_pages_config_key';

/**
 * A unique violation as our answer: KEY_TAKEN when another page of the tenant has the key
 * (the index KEY_INDEX), SLUG_TAKEN when any tenant has the slug (the primary key).
 */
function takenOf(err: unknown, page: { slug: string; key?: string | null }): unknown {
  if (sqlState(err) !== '23505') return err;
  if ((err as { constraint?: unknown }).constraint === KEY_INDEX) {
    return new AppError('KEY_TAKEN', `another status page of this tenant has the key ${page.key}; choose another`, {
      key: page.key,
    });
  }
  return new AppError('SLUG_TAKEN', `the slug ${page.slug} is taken; choose another`);
}

/** Inserts a page as it is (a taken slug: an error, or nothing when `skipTaken`); 1 when it was inserted. */
async function insertPage(tx: PgQueryable, p: StoredStatusPage, skipTaken: boolean): Promise<number> {
  const { rowCount } = await tx.query(
    `INSERT INTO status_pages (slug, tenant_id, version, title, description, monitor_ids, config_key, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8), to_timestamp($9))
     ${skipTaken ? 'ON CONFLICT (slug) DO NOTHING' : ''}`,
    [
      p.slug,
      p.tenant_id,
      p.version,
      p.title,
      p.description,
      p.monitor_ids,
      p.key,
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

  /**
   * Stores a new page: 409 SLUG_TAKEN when any tenant has the slug, 409 KEY_TAKEN when
   * another page of the tenant has its key, 403 QUOTA_EXCEEDED past the tenant's limit.
   */
  create(page: NewStatusPage, version = 1): Promise<StoredStatusPage> {
    return registryWrite(this.db, (tx) => this.createIn(tx, page, version));
  }

  /**
   * `create` inside the caller's registry write transaction (which holds the registry's
   * write lock, so the page count read here still holds at COMMIT). A taken slug or key
   * throws its AppError; the transaction is then aborted and must be rolled back.
   */
  async createIn(tx: PgClient, page: NewStatusPage, version = 1): Promise<StoredStatusPage> {
    const quota = STATUS_PAGE_LIMITS.maxPerTenant;
    const { rows } = await tx.query<{ n: string }>('SELECT count(*) AS n FROM status_pages WHERE tenant_id = $1', [
      page.tenant_id,
    ]);
    if (Number(rows[0]?.n ?? 0) >= quota) {
      throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} status pages`, { quota });
    }
    const stored = { ...page, key: page.key ?? null, version };
    try {
      await insertPage(tx, stored, false);
    } catch (err) {
      throw takenOf(err, stored);
    }
    return stored;
  }

  /**
   * Stores `next` (its key too) if the page is still at `basedOn`; undefined when another
   * change came first or it is gone. 409 KEY_TAKEN when another page of the tenant has the key.
   */
  update(next: Omit<StoredStatusPage, 'version'>, basedOn: number): Promise<StoredStatusPage | undefined> {
    return registryWrite(this.db, (tx) => this.updateIn(tx, next, basedOn));
  }

  /** `update` inside the caller's registry write transaction. */
  async updateIn(
    tx: PgClient,
    next: Omit<StoredStatusPage, 'version'>,
    basedOn: number,
  ): Promise<StoredStatusPage | undefined> {
    try {
      const { rows } = await tx.query<{ version: string }>(
        `UPDATE status_pages SET version = version + 1, title = $1, description = $2, monitor_ids = $3,
           config_key = $4, updated_at = to_timestamp($5)
         WHERE slug = $6 AND tenant_id = $7 AND version = $8 RETURNING version`,
        [
          next.title,
          next.description,
          next.monitor_ids,
          next.key,
          Math.floor(Date.parse(next.updated_at) / 1000),
          next.slug,
          next.tenant_id,
          basedOn,
        ],
      );
      return rows[0] ? { ...next, version: Number(rows[0].version) } : undefined;
    } catch (err) {
      throw takenOf(err, next);
    }
  }

  /** Deletes the page if it is still at `basedOn`. */
  remove(slug: string, tenantId: string, basedOn: number): Promise<boolean> {
    return registryWrite(this.db, (tx) => this.removeIn(tx, slug, tenantId, basedOn));
  }

  /** `remove` inside the caller's registry write transaction. */
  async removeIn(tx: PgClient, slug: string, tenantId: string, basedOn: number): Promise<boolean> {
    const { rowCount } = await tx.query(
      'DELETE FROM status_pages WHERE slug = $1 AND tenant_id = $2 AND version = $3',
      [slug, tenantId, basedOn],
    );
    return rowCount === 1;
  }

  /** The tenant's pages that have a configuration key, in slug order, read in the caller's transaction. */
  async keyedIn(tx: PgQueryable, tenantId: string): Promise<StoredStatusPage[]> {
    const { rows } = await tx.query<Row>(
      `SELECT ${COLUMNS} FROM status_pages WHERE tenant_id = $1 AND config_key IS NOT NULL ORDER BY slug`,
      [tenantId],
    );
    return rows.map(decode);
  }

  /** The tenant's pages without a configuration key, in slug order: their slug and title. */
  async unkeyedIn(tx: PgQueryable, tenantId: string): Promise<{ slug: string; title: string }[]> {
    const { rows } = await tx.query<{ slug: string; title: string }>(
      'SELECT slug, title FROM status_pages WHERE tenant_id = $1 AND config_key IS NULL ORDER BY slug',
      [tenantId],
    );
    return rows;
  }

  /**
   * Gives the tenant's page `slug` the configuration key `key` (a new version, so every
   * replica's copy follows); false when it is gone. 409 KEY_TAKEN when another page has it.
   */
  async setKeyIn(tx: PgClient, tenantId: string, slug: string, key: string): Promise<boolean> {
    return setConfigKeyIn(tx, 'status_pages', 'status page', tenantId, slug, key);
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
