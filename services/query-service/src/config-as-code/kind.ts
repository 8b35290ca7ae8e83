import { isDeepStrictEqual } from 'node:util';
import type { Request, Response } from 'express';
import type { ConfigItem, ConfigKind, ConfigSection, Problem } from '@telemetry/contract';
import type { PgClient } from '@telemetry/platform';
import { nowIso } from '../registry-objects.js';

/**
 * One kind of object a configuration document manages (docs/as-code.md): monitors,
 * alert channels, escalation policies, status pages. Each kind is a module of its own
 * (`<kind>.config.ts` beside its routes) implementing this interface with the same rules
 * as its API routes (one function serves both); the engine (engine.ts) matches a
 * document's items to the tenant's objects by key, plans, and applies every change in
 * one registry write transaction.
 *
 * Paths: every Problem a kind returns is a JSON pointer relative to the item
 * (`/interval_seconds`, `/channels/1`); the engine prefixes `/<section>/<index>`.
 */
export interface ConfigKindModule<Current extends ManagedObject = ManagedObject, Desired = unknown> {
  section: ConfigSection;
  kind: ConfigKind;

  /** The tenant's objects of this kind that have a key, read in the apply's transaction. */
  load(tx: PgClient, tenantId: string): Promise<Current[]>;

  /** The tenant's objects of this kind without a key (POST /api/config/adopt gives them one). */
  unkeyed(tx: PgClient, tenantId: string): Promise<{ id: string; name: string }[]>;

  /** Stores `key` on the object `id` (adopt); false when it is gone. */
  setKey(tx: PgClient, tenantId: string, id: string, key: string): Promise<boolean>;

  /**
   * The object's secrets, unmasked: JSON pointer (in the item's shape) → value. The
   * engine fingerprints them for export and resolves a SecretPin at one of these paths.
   */
  secrets(current: Current): Map<string, string>;

  /**
   * The item (its `key` kept, its SecretPins already replaced by the stored values) as
   * the object it describes, validated by the same rules as its create route: all its
   * problems, or the desired object. `current` is the object with the item's key, if
   * any (the desired object keeps its id, created_at and generated secrets such as a
   * webhook signing secret). References are keys, resolved with `ctx.idOf`.
   */
  prepare(item: ConfigItem, current: Current | undefined, ctx: PlanContext): Prepared<Desired>;

  /**
   * Which of `current`'s secrets (pointers of secrets(current)) a SecretPin may keep in
   * `desired`: a stored secret does not follow an object that now connects to another
   * origin (the same rule as the kind's PATCH). Absent: every pin may be kept.
   */
  keepsSecret?(current: Current, desired: Desired): (pointer: string) => boolean;

  /** The top-level item fields whose values differ (secrets compared by value); [] when none. */
  changes(current: Current, desired: Desired): string[];

  /** Writes in the apply's transaction; each returns what to do once it committed (announce, audit). */
  create(tx: PgClient, desired: Desired, ctx: ApplyContext): Promise<AfterCommit>;
  update(tx: PgClient, current: Current, desired: Desired, ctx: ApplyContext): Promise<AfterCommit>;
  /** Deletes; problems (e.g. a channel still used by an object the document does not manage) fail the whole apply. */
  remove(tx: PgClient, current: Current, ctx: ApplyContext): Promise<AfterCommit | Problem[]>;

  /** The object as a document item: its key, references as keys, secrets as SecretPins of their fingerprints. */
  exportOf(current: Current, ctx: ExportContext): ConfigItem;
}

/** What every managed object has. */
export interface ManagedObject {
  /** Its id (a status page's slug). */
  id: string;
  key: string;
  version: number;
}

export type Prepared<Desired> = { desired: Desired; id: string } | { problems: Problem[] };

export interface PlanContext {
  tenantId: string;
  /**
   * The id the object of `section` with `key` has once the document is applied: an
   * existing object's, or the one a create in this document will get. Undefined when
   * neither the tenant nor the document has it, or when this apply deletes it (prune):
   * the kind reports a problem, with `missing`'s message.
   */
  idOf(section: ConfigSection, key: string): string | undefined;
  /**
   * Why idOf(section, key) is undefined, as the problem's message at the reference's path:
   * no such key, an object this apply deletes (prune), or an object's id where its key
   * belongs (that object has no key: adopt it). Every kind says it so.
   */
  missing(section: ConfigSection, key: string): string;
  /** The id a create of this item will get (made once per item and kept; a status page's is its slug). */
  newId(): string;
}

export interface ApplyContext {
  tenantId: string;
  req: Request;
  res: Response;
}

export interface ExportContext {
  tenantId: string;
  /** The key of the object of `section` with `id` (undefined: not managed, left out of the export). */
  keyOf(section: ConfigSection, id: string): string | undefined;
  fingerprint(value: string): string;
}

/** Run after the transaction committed, in order (announce a monitor change, record the audit entry). */
export type AfterCommit = () => Promise<void>;

/**
 * A kind's conditional write found the object at another version than the apply loaded.
 * NOTE: not an answer (no PRECONDITION_FAILED): the apply loads and writes under the
 * registry write lock, which every registry write takes, so no change can come between;
 * this is a broken invariant (500 INTERNAL_ERROR, logged), and the transaction rolls back.
 */
export function movedUnderLock(what: string): Error {
  return new Error(`${what} changed under the registry write lock while a document was applied`);
}

/**
 * What a described object is, beyond its checked fields: the item's key, its id (the
 * current object's, or the new one this item gets), its tenant and times (created_at kept).
 */
export function described<T extends object>(
  checked: T,
  item: ConfigItem,
  current: { id: string; created_at: string } | undefined,
  ctx: PlanContext,
): { id: string; desired: T & { key: string; id: string; tenant_id: string; created_at: string; updated_at: string } } {
  const id = current?.id ?? ctx.newId();
  const now = nowIso();
  return {
    id,
    desired: {
      ...checked,
      key: item.key,
      id,
      tenant_id: ctx.tenantId,
      created_at: current?.created_at ?? now,
      updated_at: now,
    },
  };
}

/** The fields (in their order) whose values differ between two views of an object. */
export function differing<F extends string>(
  fields: readonly F[],
  before: Record<F, unknown>,
  after: Record<F, unknown>,
): F[] {
  return fields.filter((f) => !isDeepStrictEqual(before[f], after[f]));
}
