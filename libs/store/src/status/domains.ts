import { randomBytes } from 'node:crypto';
import { DOMAIN_TXT_PREFIX, STATUS_FOLLOW_LIMITS, toIsoSeconds, type DomainView } from '@telemetry/contract';
import { AppError, Mirror, type PgPool } from '@telemetry/platform';
import { epochOf, registryCall, registryWrite, sqlState } from '../registry/pg.js';

/**
 * Custom domains of status pages (docs/console.md, "Custom domains") in PostgreSQL's
 * `custom_domains`: a page claims a host name with a token, the tenant publishes
 * `telemetry-verify=<token>` as TXT at `_telemetry-verify.<host name>`, and a check that
 * finds it marks the claim verified. Several pages may claim one host name; the partial
 * unique index lets only one have it verified (409 DOMAIN_TAKEN for the next).
 */

/** A claim of a host name by a page, as stored. */
export interface StoredDomain {
  hostname: string;
  slug: string;
  tenantId: string;
  token: string;
  verifiedAt: string | null;
  checkedAt: string | null;
  createdAt: string;
}

/** A verified host name and the page it serves (what the Host routing reads, on every replica). */
export interface VerifiedDomain {
  hostname: string;
  slug: string;
  tenantId: string;
}

interface Row {
  hostname: string;
  slug: string;
  tenant_id: string;
  token: string;
  v: string | null;
  k: string | null;
  c: string;
}

const COLUMNS = `hostname, slug, tenant_id, token, ${epochOf('verified_at')} AS v, ${epochOf('checked_at')} AS k, ${epochOf('created_at')} AS c`;

function decode(r: Row): StoredDomain {
  return {
    hostname: r.hostname,
    slug: r.slug,
    tenantId: r.tenant_id,
    token: r.token,
    verifiedAt: r.v === null ? null : toIsoSeconds(Number(r.v)),
    checkedAt: r.k === null ? null : toIsoSeconds(Number(r.k)),
    createdAt: toIsoSeconds(Number(r.c)),
  };
}

/** The TXT record that proves `hostname` for a claim with `token`: its name and its value. */
export function domainTxtRecord(hostname: string, token: string): { txt_name: string; txt_value: string } {
  return { txt_name: `${DOMAIN_TXT_PREFIX}${hostname}`, txt_value: `telemetry-verify=${token}` };
}

/** A claim as the API answers it. */
export function domainViewOf(d: StoredDomain): DomainView {
  return {
    hostname: d.hostname,
    slug: d.slug,
    ...domainTxtRecord(d.hostname, d.token),
    verified: d.verifiedAt !== null,
    verified_at: d.verifiedAt,
    created_at: d.createdAt,
  };
}

/** A new token: 32 lower-case hex digits (128 random bits). */
function newToken(): string {
  return randomBytes(16).toString('hex');
}

export class DomainStore {
  constructor(private readonly db: PgPool) {}

  /** The claims of a page, oldest first. */
  async ofPage(slug: string): Promise<StoredDomain[]> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(`SELECT ${COLUMNS} FROM custom_domains WHERE slug = $1 ORDER BY created_at, hostname`, [slug]),
    );
    return rows.map(decode);
  }

  async get(slug: string, hostname: string): Promise<StoredDomain | undefined> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(`SELECT ${COLUMNS} FROM custom_domains WHERE slug = $1 AND hostname = $2`, [slug, hostname]),
    );
    return rows[0] && decode(rows[0]);
  }

  /**
   * Claims `hostname` for the page: a new claim (created), or the page's claim of it made
   * before (not created: the same token). 403 QUOTA_EXCEEDED past maxDomainsPerPage, counted
   * under the registry's write lock.
   */
  async add(slug: string, tenantId: string, hostname: string): Promise<{ domain: StoredDomain; created: boolean }> {
    return registryWrite(this.db, async (tx) => {
      const { rows } = await tx.query<Row>(`SELECT ${COLUMNS} FROM custom_domains WHERE slug = $1`, [slug]);
      const before = rows.find((r) => r.hostname === hostname);
      if (before) return { domain: decode(before), created: false };
      const quota = STATUS_FOLLOW_LIMITS.maxDomainsPerPage;
      if (rows.length >= quota) {
        throw new AppError('QUOTA_EXCEEDED', `a status page may have ${quota} custom domains`, { quota });
      }
      const inserted = await tx.query<Row>(
        `INSERT INTO custom_domains (hostname, slug, tenant_id, token) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
        [hostname, slug, tenantId, newToken()],
      );
      return { domain: decode(inserted.rows[0]!), created: true };
    });
  }

  /** The page that has `hostname` verified, if any (of any tenant). */
  async verifiedOwner(hostname: string): Promise<VerifiedDomain | undefined> {
    return (await this.verified([hostname]))[0];
  }

  /**
   * Records a check of the page's claim: found (verified now; 409 DOMAIN_TAKEN when another
   * page has the host name verified) or not (only `checked_at`). Undefined when the claim is gone.
   */
  async checked(slug: string, hostname: string, found: boolean): Promise<StoredDomain | undefined> {
    try {
      const { rows } = await registryWrite(this.db, (tx) =>
        tx.query<Row>(
          `UPDATE custom_domains
             SET checked_at = now(), verified_at = CASE WHEN $3 THEN coalesce(verified_at, now()) ELSE verified_at END
           WHERE slug = $1 AND hostname = $2 RETURNING ${COLUMNS}`,
          [slug, hostname, found],
        ),
      );
      return rows[0] && decode(rows[0]);
    } catch (err) {
      if (sqlState(err) === '23505') throw domainTaken(hostname);
      throw err;
    }
  }

  /** Removes the page's claim; whether there was one. */
  async remove(slug: string, hostname: string): Promise<boolean> {
    const { rowCount } = await registryWrite(this.db, (tx) =>
      tx.query('DELETE FROM custom_domains WHERE slug = $1 AND hostname = $2', [slug, hostname]),
    );
    return rowCount === 1;
  }

  /** Every verified host name (or those among `hostnames`) and its page. */
  async verified(hostnames?: readonly string[]): Promise<VerifiedDomain[]> {
    const { rows } = await registryCall(() =>
      hostnames === undefined
        ? this.db.query<{ hostname: string; slug: string; tenant_id: string }>(
            'SELECT hostname, slug, tenant_id FROM custom_domains WHERE verified_at IS NOT NULL',
          )
        : this.db.query<{ hostname: string; slug: string; tenant_id: string }>(
            'SELECT hostname, slug, tenant_id FROM custom_domains WHERE verified_at IS NOT NULL AND hostname = ANY($1::text[])',
            [hostnames],
          ),
    );
    return rows.map((r) => ({ hostname: r.hostname, slug: r.slug, tenantId: r.tenant_id }));
  }
}

/** 409 DOMAIN_TAKEN: another page has the host name verified. */
export function domainTaken(hostname: string): AppError {
  return new AppError('DOMAIN_TAKEN', `${hostname} is verified for another status page; it serves one page`);
}

/**
 * Every verified host name by name, kept current by the registry's change feed (entity
 * `custom_domains`, id = host name): each query-service replica routes a Host by it.
 */
export function verifiedDomainMirror(store: DomainStore): Mirror<VerifiedDomain> {
  return new Mirror<VerifiedDomain>(
    'custom_domains',
    (hostnames) => store.verified(hostnames),
    (d) => d.hostname,
  );
}
