import type { Express } from 'express';
import { ok } from '@telemetry/contract';
import { rejectUnknown } from '@telemetry/platform';
import { tenantSettings, updateTenantSettings } from '@telemetry/store';
import { changedFields } from './access/audit.js';
import { validBody, type PeopleRoutesDeps } from './members.route.js';
import { tenantOf } from './params.js';
import { refuseLimited } from './registry-objects.js';

/**
 * /api/settings (docs/access.md, "Members"): the tenant's name and its single sign-on
 * domain rule (a verified email of one of `auto_admit_domains` joins as `auto_admit_role`).
 */
export function settingsRoutes(app: Express, deps: PeopleRoutesDeps): void {
  app.get('/api/settings', deps.auth('settings:read'), async (req, res) => {
    rejectUnknown(req, new Set());
    res.setHeader('Cache-Control', 'no-store');
    res.json(ok(await tenantSettings(deps.db, tenantOf(res))));
  });

  app.patch('/api/settings', deps.auth('settings:write'), async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res, 'the tenant’s settings');
    const patch = await validBody(req, deps.validators.settingsPatch, 'settings change');
    const { before, after } = await updateTenantSettings(deps.db, tenantOf(res), patch);
    const changes = changedFields({ ...before }, { ...after });
    if (Object.keys(changes).length > 0)
      await deps.audit.record(req, res, {
        action: 'settings.update',
        target: { type: 'tenant', id: tenantOf(res) },
        changes,
      });
    res.json(ok(after));
  });
}
