import type { Express, Request, RequestHandler } from 'express';
import { CONFIG_LIMITS, ok } from '@telemetry/contract';
import { bad, readJsonBody, rejectUnknown, single } from '@telemetry/platform';
import type { Auditor } from '../access/audit.js';
import { tenantOf } from '../params.js';
import { refuseLimited } from '../registry-objects.js';
import type { ConfigEngine } from './engine.js';

export interface ConfigRoutesDeps {
  engine: ConfigEngine;
  /** Each route needs both families' scopes: monitors:… (monitors, status pages) and channels:… (channels, policies). */
  auth: { read: RequestHandler[]; write: RequestHandler[] };
  audit: Auditor;
}

/** A document item nests two levels below the body's top (section, item) deeper than its kind's own body (8). */
const MAX_JSON_DEPTH = 10;

/** `true` or `false` (nothing else), `fallback` when absent. */
function booleanParam(req: Request, name: string, fallback: boolean): boolean {
  const raw = single(req, name);
  if (raw === undefined) return fallback;
  if (raw !== 'true' && raw !== 'false') throw bad(name, 'must be true or false');
  return raw === 'true';
}

/** GET /api/config, POST /api/config, POST /api/config/adopt (docs/as-code.md, "The API"; docs/api.md). */
export function configRoutes(app: Express, deps: ConfigRoutesDeps): void {
  app.get('/api/config', ...deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok(await deps.engine.export(tenantOf(res))));
  });

  app.post('/api/config', ...deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set(['dry_run', 'prune']));
    const dryRun = booleanParam(req, 'dry_run', false);
    const prune = booleanParam(req, 'prune', false);
    refuseLimited(res, 'the configuration');
    const body = await readJsonBody(req, { maxBytes: CONFIG_LIMITS.maxBodyBytes, maxRatio: 100 }, MAX_JSON_DEPTH);
    const tenantId = tenantOf(res);
    const plan = await deps.engine.apply(tenantId, body, { dryRun, prune }, { req, res });
    if (plan.applied) {
      // Each object's change is recorded by its kind; this entry says one document did them.
      await deps.audit.record(req, res, {
        action: 'config.apply',
        target: { type: 'config', id: tenantId },
        changes: {
          ...Object.fromEntries(Object.entries(plan.summary).map(([k, n]) => [k, { after: n }])),
          prune: { after: prune },
        },
      });
    }
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok(plan));
  });

  app.post('/api/config/adopt', ...deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'the configuration');
    const adopted = await deps.engine.adopt(tenantOf(res));
    for (const a of adopted) {
      await deps.audit.record(req, res, {
        action: 'config.adopt',
        target: { type: a.kind, id: a.id },
        changes: { key: { before: null, after: a.key } },
      });
    }
    res.json(ok({ adopted }));
  });
}
