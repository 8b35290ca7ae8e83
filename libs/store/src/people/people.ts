import { randomBytes } from 'node:crypto';
import type { PersonView, Role } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';

/**
 * People and their memberships (docs/access.md, "People and memberships"). A person is one
 * email (kept in lower case); they belong to tenants through `memberships`, one role each.
 */

/** A new person id: `per_` and 20 lower-case hex digits. */
export function newPersonId(): string {
  return `per_${randomBytes(10).toString('hex')}`;
}

/** An email as stored and compared: trimmed, lower case. */
export function normalEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** A person with what sign-in needs (never answered as is: password_hash and totp_sealed stay here). */
export interface PersonRecord extends PersonView {
  password_hash: string | null;
  totp_sealed: string | null;
  totp_enabled: boolean;
  totp_last_step: number;
}

const PERSON = `person_id AS id, email, name, password_hash, totp_sealed, totp_enabled, totp_last_step`;

interface PersonRow extends Omit<PersonRecord, 'totp_last_step'> {
  totp_last_step: string;
}

function decodePerson(r: PersonRow): PersonRecord {
  return { ...r, totp_last_step: Number(r.totp_last_step) };
}

export async function personByEmail(db: PgQueryable, email: string): Promise<PersonRecord | undefined> {
  const { rows } = await registryCall(() =>
    db.query<PersonRow>(`SELECT ${PERSON} FROM people WHERE email = $1`, [normalEmail(email)]),
  );
  return rows[0] && decodePerson(rows[0]);
}

export async function personById(db: PgQueryable, personId: string): Promise<PersonRecord | undefined> {
  const { rows } = await registryCall(() =>
    db.query<PersonRow>(`SELECT ${PERSON} FROM people WHERE person_id = $1`, [personId]),
  );
  return rows[0] && decodePerson(rows[0]);
}

/**
 * The person with this email, made when there is none (`name` and `passwordHash` are set
 * only on a new person). Safe against a concurrent make of the same email.
 */
export async function ensurePerson(
  db: PgQueryable,
  p: { email: string; name?: string; passwordHash?: string | null },
): Promise<{ person: PersonRecord; created: boolean }> {
  const email = normalEmail(p.email);
  const { rows } = await registryCall(() =>
    db.query<PersonRow>(
      `INSERT INTO people (person_id, email, name, password_hash, password_changed_at)
       VALUES ($1, $2, $3, $4::text, CASE WHEN $4::text IS NULL THEN NULL ELSE now() END)
       ON CONFLICT (email) DO NOTHING
       RETURNING ${PERSON}`,
      [newPersonId(), email, (p.name ?? '').slice(0, 200), p.passwordHash ?? null],
    ),
  );
  if (rows[0]) return { person: decodePerson(rows[0]), created: true };
  const found = await personByEmail(db, email);
  if (!found) throw new Error(`person ${email} neither made nor found`);
  return { person: found, created: false };
}

/** A person's role in a tenant, or undefined when they are not a member. */
export async function roleIn(db: PgQueryable, tenantId: string, personId: string): Promise<Role | undefined> {
  const { rows } = await registryCall(() =>
    db.query<{ role: Role }>('SELECT role FROM memberships WHERE tenant_id = $1 AND person_id = $2', [
      tenantId,
      personId,
    ]),
  );
  return rows[0]?.role;
}

/** Makes a person a member with `role`; an existing membership keeps its role. Returns whether it is new. */
export async function addMembership(
  db: PgQueryable,
  m: { tenantId: string; personId: string; role: Role; createdBy: string },
): Promise<boolean> {
  const { rowCount } = await registryCall(() =>
    db.query(
      `INSERT INTO memberships (tenant_id, person_id, role, created_by) VALUES ($1, $2, $3, $4)
       ON CONFLICT (tenant_id, person_id) DO NOTHING`,
      [m.tenantId, m.personId, m.role, m.createdBy],
    ),
  );
  return rowCount === 1;
}
