import type { Express, Request, RequestHandler, Response } from 'express';
import { createEventSchemaApiValidators, describeErrors, ok } from '@telemetry/contract';
import { eventSchemaProblems } from '@telemetry/contract/event-schema';
import {
  AppError,
  cursorParam,
  limitParam,
  readJsonBody,
  rejectUnknown,
  sendPage,
  type Logger,
} from '@telemetry/platform';
import {
  EVENT_SCHEMA_ID_PATTERN,
  newEventSchemaId,
  type EventSchemaStore,
  type StoredEventSchema,
} from '@telemetry/store';
import { recordChange, type Auditor } from './access/audit.js';
import { principalOf } from './access/principal.js';
import { storeCall as storeCallOf, tenantOf } from './params.js';
import { conditionally, etagOf, invalid, refuseLimited } from './registry-objects.js';

export interface EventSchemaRoutesDeps {
  store: EventSchemaStore;
  logger: Logger;
  /** event_schemas:read and event_schemas:write (docs/access.md). */
  auth: { read: RequestHandler; write: RequestHandler };
  audit: Auditor;
}

const ID = new RegExp(EVENT_SCHEMA_ID_PATTERN);
const MAX_PAGE = 200;
/** A body holds a schema of up to 32 KiB (JSON-escaped a little more); deeper than 64 the JSON reader refuses it. */
const BODY_LIMITS = { maxBytes: 64 * 1024, maxRatio: 100 };
const MAX_BODY_DEPTH = 64;

function idOf(req: Request): string {
  const id = String(req.params.id);
  if (!ID.test(id)) throw new AppError('EVENT_SCHEMA_NOT_FOUND', 'there is no such event schema');
  return id;
}

function view({ tenant_id: _t, ...s }: StoredEventSchema): Omit<StoredEventSchema, 'tenant_id'> {
  return s;
}

/** 400 INVALID_SCHEMA when the submitted JSON Schema is refused (docs/event-schemas.md, "Refusals"). */
function checkSchema(schema: object, at: string): void {
  const problems = eventSchemaProblems(schema).map((p) => ({
    path: `${at}${p.path === '/' ? '' : p.path}`,
    message: p.message,
  }));
  if (problems.length > 0) {
    throw new AppError('INVALID_SCHEMA', `the schema is refused: ${problems[0]?.path} ${problems[0]?.message}`, {
      problems,
    });
  }
}

/** Who made a version: the signed-in person's id or the API key's id. */
function actorId(res: Response): string {
  return principalOf(res).actor.id;
}

/** /api/event-schemas (docs/event-schemas.md). */
export function eventSchemaRoutes(app: Express, deps: EventSchemaRoutesDeps): void {
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);
  const validate = createEventSchemaApiValidators();
  const load = async (req: Request, res: Response): Promise<StoredEventSchema> => {
    const id = idOf(req);
    const s = await storeCall(req, 'event schema lookup', () => deps.store.get(tenantOf(res), id));
    if (!s) throw new AppError('EVENT_SCHEMA_NOT_FOUND', `there is no event schema ${id}`);
    return s;
  };
  const body = (req: Request): Promise<unknown> => readJsonBody(req, BODY_LIMITS, MAX_BODY_DEPTH);
  const withVersions = async (req: Request, s: StoredEventSchema) => ({
    ...view(s),
    versions: await storeCall(req, 'event schema versions', () => deps.store.versions(s.id)),
  });

  app.get('/api/event-schemas', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set(['limit', 'cursor']));
    const limit = limitParam(req, MAX_PAGE, 100);
    const after = cursorParam(req, (v): v is string => typeof v === 'string' && ID.test(v)) ?? '';
    const rows = await storeCall(req, 'event schema list', () => deps.store.list(tenantOf(res), limit + 1, after));
    sendPage(req, res, rows, limit, (last) => last.id, view);
  });

  app.post('/api/event-schemas', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'event schemas');
    const b = await body(req);
    if (!validate.create(b)) throw invalid('event schema', describeErrors(validate.create.errors));
    checkSchema(b.schema, '/schema');
    const s = await storeCall(req, 'event schema insert', () =>
      deps.store.create({
        id: newEventSchemaId(),
        tenant_id: tenantOf(res),
        source: b.source,
        category: b.category,
        action: b.action,
        schema: b.schema,
        created_by: actorId(res),
      }),
    );
    const shown = await withVersions(req, s);
    await recordChange(
      deps.audit,
      req,
      res,
      'event_schema.create',
      { type: 'event_schema', id: s.id },
      undefined,
      shown,
    );
    res.status(201).setHeader('Location', `/api/event-schemas/${s.id}`);
    res.setHeader('ETag', etagOf(s.version));
    res.json(ok(shown));
  });

  app.get('/api/event-schemas/:id', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    const s = await load(req, res);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('ETag', etagOf(s.version));
    res.json(ok(await withVersions(req, s)));
  });

  app.post('/api/event-schemas/:id/versions', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'event schemas');
    idOf(req);
    const b = await body(req);
    if (!validate.version(b)) throw invalid('event schema version', describeErrors(validate.version.errors));
    checkSchema(b.schema, '/schema');
    let before: StoredEventSchema | undefined;
    const s = await conditionally(
      req,
      'event schema',
      () => load(req, res),
      (current) => {
        before = current;
        return storeCall(req, 'event schema version insert', () =>
          deps.store.addVersion(current.tenant_id, current.id, b.schema, actorId(res), current.version),
        );
      },
    );
    const target = { type: 'event_schema', id: s.id };
    await recordChange(deps.audit, req, res, 'event_schema.add_version', target, before && view(before), {
      ...view(s),
      schema: b.schema,
    });
    res.status(201).setHeader('ETag', etagOf(s.version));
    res.json(ok(await withVersions(req, s)));
  });

  app.patch('/api/event-schemas/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'event schemas');
    idOf(req);
    const b = await body(req);
    if (!validate.patch(b)) throw invalid('event schema', describeErrors(validate.patch.errors));
    let before: StoredEventSchema | undefined;
    const s = await conditionally(
      req,
      'event schema',
      () => load(req, res),
      (current) => {
        before = current;
        return storeCall(req, 'event schema update', () =>
          deps.store.setAction(current.tenant_id, current.id, b.action, current.version),
        );
      },
    );
    const target = { type: 'event_schema', id: s.id };
    await recordChange(deps.audit, req, res, 'event_schema.update', target, before && view(before), view(s));
    res.setHeader('ETag', etagOf(s.version));
    res.json(ok(view(s)));
  });

  app.delete('/api/event-schemas/:id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'event schemas');
    let gone: StoredEventSchema | undefined;
    await conditionally(
      req,
      'event schema',
      () => load(req, res),
      async (current) => {
        gone = current;
        return (await storeCall(req, 'event schema delete', () => deps.store.remove(current.tenant_id, current.id)))
          ? true
          : undefined;
      },
    );
    const target = { type: 'event_schema', id: gone!.id };
    await recordChange(deps.audit, req, res, 'event_schema.delete', target, view(gone!), undefined);
    res.json(ok(null));
  });
}
