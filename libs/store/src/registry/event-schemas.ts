import { randomBytes } from 'node:crypto';
import { EVENT_SCHEMA_LIMITS, type EventSchemaAction } from '@telemetry/contract';
import { AppError, Mirror, type PgPool, type PgQueryable } from '@telemetry/platform';
import { epochOf, isoOfEpoch, registryCall, registryWrite } from './pg.js';

export { EVENT_SCHEMA_TABLES, EVENT_SCHEMAS_MIGRATION } from './schema-event-schemas.js';

/** The change feed's entity of event schemas. */
export const EVENT_SCHEMAS_ENTITY = 'event_schemas';

/** A new schema id: `sch_` and 20 lower-case hex digits. */
export function newEventSchemaId(): string {
  return `sch_${randomBytes(10).toString('hex')}`;
}

export const EVENT_SCHEMA_ID_PATTERN = '^sch_[a-z0-9]{20}$';

export interface EventSchemaVersion {
  version: number;
  schema: object;
  created_by: string;
  created_at: string;
}

export interface StoredEventSchema {
  id: string;
  tenant_id: string;
  source: string;
  category: string;
  action: EventSchemaAction;
  latest_version: number;
  /** The row's version (ETag): changes with the action and with each new schema version. */
  version: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

interface Row {
  schema_id: string;
  tenant_id: string;
  source: string;
  category: string;
  action: EventSchemaAction;
  latest_version: number;
  version: string;
  created_by: string;
  c: string;
  u: string;
}

const COLUMNS = `schema_id, tenant_id, source, category, action, latest_version, version, created_by,
  ${epochOf('created_at')} AS c, ${epochOf('updated_at')} AS u`;

function decode(r: Row): StoredEventSchema {
  return {
    id: r.schema_id,
    tenant_id: r.tenant_id,
    source: r.source,
    category: r.category,
    action: r.action,
    latest_version: Number(r.latest_version),
    version: Number(r.version),
    created_by: r.created_by,
    created_at: isoOfEpoch(r.c),
    updated_at: isoOfEpoch(r.u),
  };
}

/** The query service's writes and reads of event schemas (its role: every privilege but UPDATE of versions). */
export class EventSchemaStore {
  constructor(private readonly db: PgPool) {}

  /** A page of the tenant's schemas by id, after `after` (exclusive). */
  async list(tenantId: string, limit: number, after = ''): Promise<StoredEventSchema[]> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(
        `SELECT ${COLUMNS} FROM event_schemas WHERE tenant_id = $1 AND schema_id > $2 ORDER BY schema_id LIMIT $3`,
        [tenantId, after, limit],
      ),
    );
    return rows.map(decode);
  }

  async get(tenantId: string, id: string): Promise<StoredEventSchema | undefined> {
    const { rows } = await registryCall(() =>
      this.db.query<Row>(`SELECT ${COLUMNS} FROM event_schemas WHERE tenant_id = $1 AND schema_id = $2`, [
        tenantId,
        id,
      ]),
    );
    return rows[0] && decode(rows[0]);
  }

  /** Every version of a schema, newest first. */
  async versions(id: string): Promise<EventSchemaVersion[]> {
    const { rows } = await registryCall(() =>
      this.db.query<{ version: number; definition: string; created_by: string; c: string }>(
        `SELECT version, definition, created_by, ${epochOf('created_at')} AS c FROM event_schema_versions
         WHERE schema_id = $1 ORDER BY version DESC`,
        [id],
      ),
    );
    return rows.map((r) => ({
      version: Number(r.version),
      schema: JSON.parse(r.definition) as object,
      created_by: r.created_by,
      created_at: isoOfEpoch(r.c),
    }));
  }

  /** A new schema with its version 1: 409 SCHEMA_EXISTS for a taken (source, category), 403 past the quota. */
  async create(s: {
    id: string;
    tenant_id: string;
    source: string;
    category: string;
    action: EventSchemaAction;
    schema: object;
    created_by: string;
  }): Promise<StoredEventSchema> {
    return registryWrite(this.db, async (tx) => {
      const { rows: taken } = await tx.query<{ schema_id: string }>(
        'SELECT schema_id FROM event_schemas WHERE tenant_id = $1 AND source = $2 AND category = $3',
        [s.tenant_id, s.source, s.category],
      );
      if (taken[0]) {
        throw new AppError(
          'SCHEMA_EXISTS',
          `this tenant has schema ${taken[0].schema_id} for that source and category`,
          {
            schema_id: taken[0].schema_id,
          },
        );
      }
      const quota = EVENT_SCHEMA_LIMITS.maxSchemasPerTenant;
      const { rows: n } = await tx.query<{ n: string }>(
        'SELECT count(*) AS n FROM event_schemas WHERE tenant_id = $1',
        [s.tenant_id],
      );
      if (Number(n[0]?.n ?? 0) >= quota) {
        throw new AppError('QUOTA_EXCEEDED', `this tenant may have ${quota} event schemas`, { quota });
      }
      const { rows } = await tx.query<Row>(
        `INSERT INTO event_schemas (schema_id, tenant_id, source, category, action, created_by)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
        [s.id, s.tenant_id, s.source, s.category, s.action, s.created_by],
      );
      await tx.query(
        'INSERT INTO event_schema_versions (schema_id, version, definition, created_by) VALUES ($1, 1, $2, $3)',
        [s.id, JSON.stringify(s.schema), s.created_by],
      );
      return decode(rows[0]!);
    });
  }

  /** Adds the next version if the schema is still at row version `basedOn` (undefined otherwise). */
  async addVersion(
    tenantId: string,
    id: string,
    schema: object,
    createdBy: string,
    basedOn: number,
  ): Promise<StoredEventSchema | undefined> {
    return registryWrite(this.db, async (tx) => {
      const { rows } = await tx.query<Row>(
        `UPDATE event_schemas SET latest_version = latest_version + 1, version = version + 1, updated_at = now()
         WHERE tenant_id = $1 AND schema_id = $2 AND version = $3 RETURNING ${COLUMNS}`,
        [tenantId, id, basedOn],
      );
      const row = rows[0];
      if (!row) return undefined;
      if (row.latest_version > EVENT_SCHEMA_LIMITS.maxVersionsPerSchema) {
        const quota = EVENT_SCHEMA_LIMITS.maxVersionsPerSchema;
        throw new AppError('QUOTA_EXCEEDED', `an event schema may have ${quota} versions`, { quota });
      }
      await tx.query(
        'INSERT INTO event_schema_versions (schema_id, version, definition, created_by) VALUES ($1, $2, $3, $4)',
        [id, row.latest_version, JSON.stringify(schema), createdBy],
      );
      return decode(row);
    });
  }

  /** Changes the action if still at `basedOn` (undefined otherwise). */
  async setAction(
    tenantId: string,
    id: string,
    action: EventSchemaAction,
    basedOn: number,
  ): Promise<StoredEventSchema | undefined> {
    return registryWrite(this.db, async (tx) => {
      const { rows } = await tx.query<Row>(
        `UPDATE event_schemas SET action = $1, version = version + 1, updated_at = now()
         WHERE tenant_id = $2 AND schema_id = $3 AND version = $4 RETURNING ${COLUMNS}`,
        [action, tenantId, id, basedOn],
      );
      return rows[0] && decode(rows[0]);
    });
  }

  /** Deletes a schema and its versions; false when it is gone already. */
  async remove(tenantId: string, id: string): Promise<boolean> {
    return registryWrite(this.db, async (tx) => {
      const { rowCount } = await tx.query('DELETE FROM event_schemas WHERE tenant_id = $1 AND schema_id = $2', [
        tenantId,
        id,
      ]);
      return rowCount === 1;
    });
  }
}

/** A schema as a gateway holds it: its newest version's definition. */
export interface EventSchemaRecord {
  schema_id: string;
  tenant_id: string;
  source: string;
  category: string;
  action: EventSchemaAction;
  version: number;
  schema: object;
}

/** Schemas with their newest version: of these ids, or every one (a gateway's copy; the replay tool). */
export async function loadEventSchemaRecords(db: PgQueryable, ids?: readonly string[]): Promise<EventSchemaRecord[]> {
  const sql = `SELECT s.schema_id, s.tenant_id, s.source, s.category, s.action, s.latest_version AS version, v.definition
    FROM event_schemas s JOIN event_schema_versions v ON v.schema_id = s.schema_id AND v.version = s.latest_version`;
  const { rows } =
    ids === undefined
      ? await db.query<Omit<EventSchemaRecord, 'schema'> & { definition: string }>(sql)
      : await db.query<Omit<EventSchemaRecord, 'schema'> & { definition: string }>(
          `${sql} WHERE s.schema_id = ANY($1::text[])`,
          [ids],
        );
  return rows.map(({ definition, ...r }) => ({
    ...r,
    version: Number(r.version),
    schema: JSON.parse(definition) as object,
  }));
}

/**
 * A replica's copy of every tenant's schemas, by (tenant, source, category), kept current
 * by the registry's change feed (subscribe `mirror`). Looking a schema up costs a map read.
 */
export class EventSchemaIndex {
  readonly mirror: Mirror<EventSchemaRecord>;
  private readonly byTarget = new Map<string, EventSchemaRecord>();
  private readonly targetOf = new Map<string, string>();
  /** Schemas per tenant: a tenant with none skips every look-up. */
  private readonly perTenant = new Map<string, number>();

  constructor(load: (ids?: readonly string[]) => Promise<EventSchemaRecord[]>) {
    this.mirror = new Mirror<EventSchemaRecord>(EVENT_SCHEMAS_ENTITY, load, (r) => r.schema_id);
    this.mirror.onChange((ids) => {
      for (const id of ids) {
        const old = this.targetOf.get(id);
        if (old !== undefined) {
          const tenant = this.byTarget.get(old)?.tenant_id ?? '';
          this.byTarget.delete(old);
          this.count(tenant, -1);
        }
        this.targetOf.delete(id);
        const r = this.mirror.get(id);
        if (r) {
          const t = target(r.tenant_id, r.source, r.category);
          this.byTarget.set(t, r);
          this.targetOf.set(id, t);
          this.count(r.tenant_id, 1);
        }
      }
    });
  }

  private count(tenantId: string, by: number): void {
    const n = (this.perTenant.get(tenantId) ?? 0) + by;
    if (n > 0) this.perTenant.set(tenantId, n);
    else this.perTenant.delete(tenantId);
  }

  /** Whether the tenant has any schema (else its events need no look-up). */
  hasTenant(tenantId: string): boolean {
    return this.perTenant.has(tenantId);
  }

  find(tenantId: string, source: string, category: string): EventSchemaRecord | undefined {
    return this.byTarget.get(target(tenantId, source, category));
  }
}

function target(tenantId: string, source: string, category: string): string {
  return `${tenantId}\u0000${source}\u0000${category}`;
}
