import type { Express, RequestHandler } from 'express';
import { AppError, rejectUnknown, type PgPool } from '@telemetry/platform';
import { describeErrors, ok, type KeyView, type Validators } from '@telemetry/contract';
import {
  DEFAULT_IP_STORAGE,
  issueKey,
  listTenantKeys,
  parseDuration,
  revokeTenantKey,
  setTenantKeyIpStorage,
  type KeyRecord,
} from '@telemetry/store';
import { changedFields, type Auditor } from './access/audit.js';
import { principalOf } from './access/principal.js';
import { tenantOf } from './params.js';
import { invalid, jsonBody, refuseLimited } from './registry-objects.js';

/**
 * /api/keys (docs/access.md, "API keys"): the tenant's API and telemetry keys, made and
 * revoked by its members (and by keys holding keys:write). A key's secret is shown once,
 * when it is made; its hash never. `npm run keys` stays for operators.
 */

export interface KeyRoutesDeps {
  /** The registry (PostgreSQL), as the query service's role. */
  pool: PgPool;
  validators: Validators;
  audit: Auditor;
  auth: { read: RequestHandler; write: RequestHandler };
}

const KEY_ID = /^[0-9a-f]{16}$/;

/** A key as the API shows it: never its secret's hash, nor its tenant (the caller's). */
export function keyView(r: KeyRecord): KeyView {
  const iso = (t: string | null): string | null => (t === null ? null : `${t.replace(' ', 'T')}Z`);
  return {
    id: r.key_id,
    kind: r.kind,
    name: r.name,
    scopes: r.scopes,
    monitor_ids: r.monitor_ids,
    allowed_origins: r.allowed_origins,
    allowed_sources: r.allowed_sources,
    created_at: iso(r.created_at)!,
    created_by: r.created_by ?? '',
    expires_at: iso(r.expires_at),
    revoked: r.revoked !== 0,
    ip_storage: r.ip_storage ?? DEFAULT_IP_STORAGE,
  };
}

export function keyRoutes(app: Express, deps: KeyRoutesDeps): void {
  app.get('/api/keys', deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok((await listTenantKeys(deps.pool, tenantOf(res))).map(keyView)));
  });

  app.post('/api/keys', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    // A key limited to some monitors could otherwise make one that is not.
    refuseLimited(res, 'keys');
    const body = await jsonBody(req);
    if (!deps.validators.keyCreate(body)) throw invalid('key', describeErrors(deps.validators.keyCreate.errors));
    const principal = principalOf(res);
    if (body.kind === 'telemetry' && (body.scopes !== undefined || body.monitor_ids !== undefined)) {
      throw invalid('key', [{ path: body.scopes ? '/scopes' : '/monitor_ids', message: 'only API keys take it' }]);
    }
    if (
      body.kind === 'api' &&
      (body.allowed_origins !== undefined || body.allowed_sources !== undefined || body.ip_storage !== undefined)
    ) {
      throw invalid('key', [
        {
          path: body.allowed_origins ? '/allowed_origins' : body.allowed_sources ? '/allowed_sources' : '/ip_storage',
          message: 'only telemetry keys take it',
        },
      ]);
    }
    // Nobody gives a key more than they hold (an API key's default scope included).
    const scopes = body.kind === 'api' ? (body.scopes ?? ['checks:read']) : [];
    const lacking = scopes.filter((s) => !principal.scopes.has(s));
    if (lacking.length > 0) {
      throw new AppError('INSUFFICIENT_SCOPE', `you may not give a key a scope you lack: ${lacking.join(', ')}`, {
        scopes: lacking,
      });
    }
    const issued = await issueKey(deps.pool, {
      tenantId: tenantOf(res),
      kind: body.kind,
      name: body.name,
      ...(body.kind === 'api' ? { scopes } : {}),
      ...(body.monitor_ids ? { monitorIds: body.monitor_ids } : {}),
      ...(body.allowed_origins ? { allowedOrigins: body.allowed_origins } : {}),
      ...(body.allowed_sources ? { allowedSources: body.allowed_sources } : {}),
      ...(body.expires_in ? { expiresInSeconds: parseDuration(body.expires_in)! } : {}),
      ...(body.ip_storage ? { ipStorage: body.ip_storage } : {}),
      createdBy: principal.actor.type === 'person' ? principal.actor.id : `key:${principal.keyId}`,
    });
    const view = keyView(issued.record);
    await deps.audit.record(req, res, {
      action: 'key.create',
      target: { type: 'key', id: view.id },
      changes: changedFields(undefined, { ...view }),
    });
    res.status(201).setHeader('Location', `/api/keys/${view.id}`);
    res.json(ok({ ...view, key: issued.key }));
  });

  // What a telemetry key's events keep of the client's address (docs/enrichment.md): the
  // one setting of a key that changes after it is made; the gateways follow within a second.
  app.patch('/api/keys/:key_id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'keys');
    const keyId = String(req.params.key_id);
    const body = await jsonBody(req);
    if (!deps.validators.keyPatch(body)) throw invalid('key', describeErrors(deps.validators.keyPatch.errors));
    const changed = KEY_ID.test(keyId)
      ? await setTenantKeyIpStorage(deps.pool, tenantOf(res), keyId, body.ip_storage)
      : undefined;
    if (!changed) throw new AppError('KEY_NOT_FOUND', `there is no key ${keyId.slice(0, 40)} in this tenant`);
    if (changed.before.kind !== 'telemetry') {
      throw invalid('key', [{ path: '/ip_storage', message: 'only telemetry keys take it' }]);
    }
    const before = keyView(changed.before);
    const after = keyView(changed.after);
    if (before.ip_storage !== after.ip_storage) {
      await deps.audit.record(req, res, {
        action: 'key.update',
        target: { type: 'key', id: after.id },
        changes: changedFields({ ...before }, { ...after }),
      });
    }
    res.json(ok(after));
  });

  app.delete('/api/keys/:key_id', deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'keys');
    const keyId = String(req.params.key_id);
    const before = KEY_ID.test(keyId) ? await revokeTenantKey(deps.pool, tenantOf(res), keyId) : undefined;
    if (!before) throw new AppError('KEY_NOT_FOUND', `there is no key ${keyId.slice(0, 40)} in this tenant`);
    if (before.revoked === 0) {
      const view = keyView(before);
      await deps.audit.record(req, res, {
        action: 'key.revoke',
        target: { type: 'key', id: view.id },
        changes: changedFields({ ...view }, { ...view, revoked: true }),
      });
    }
    res.json(ok({}));
  });
}
