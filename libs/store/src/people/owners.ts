import { randomBytes } from 'node:crypto';
import type { PersonView } from '@telemetry/contract';
import { inTransaction, type PgPool } from '@telemetry/platform';
import { registryCall } from '../registry/pg.js';
import { hashPassword, requireStrongPassword } from './passwords.js';
import { ensurePerson } from './people.js';

/**
 * A tenant's owner made by the operator (`npm run people -- create-owner`, and `npm start`'s
 * development owner; docs/access.md, "People and memberships"): the person (made when
 * there is none) becomes an owner of the tenant (an existing member is promoted). A person
 * without a password gets `password`, or a random one: returned so that it is shown once.
 */
export async function ensureOwner(
  pool: PgPool,
  o: { tenantId: string; email: string; name?: string; password?: string },
): Promise<{ person: PersonView; createdPerson: boolean; password: string | undefined }> {
  // 24 base64url characters: 144 random bits.
  const password = o.password ?? randomBytes(18).toString('base64url');
  requireStrongPassword(password);
  const hash = await hashPassword(password);
  return registryCall(() =>
    inTransaction(pool, async (tx) => {
      const { person, created } = await ensurePerson(tx, { email: o.email, name: o.name, passwordHash: hash });
      const set = created
        ? 1
        : ((
            await tx.query(
              `UPDATE people SET password_hash = $2, password_changed_at = now()
               WHERE person_id = $1 AND password_hash IS NULL`,
              [person.id, hash],
            )
          ).rowCount ?? 0);
      await tx.query(
        `INSERT INTO memberships (tenant_id, person_id, role, created_by) VALUES ($1, $2, 'owner', 'operator')
         ON CONFLICT (tenant_id, person_id) DO UPDATE SET role = 'owner'`,
        [o.tenantId, person.id],
      );
      return {
        person: { id: person.id, email: person.email, name: person.name },
        createdPerson: created,
        password: set > 0 ? password : undefined,
      };
    }),
  );
}
