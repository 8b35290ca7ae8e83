import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { LIMITS } from '@telemetry/contract';
import { AppError, answeredNotModified, bad } from '@telemetry/platform';
import { screenshotSql, type ScreenshotReadRow } from '@telemetry/store';
import { MONITOR_ID, monitorIdOf, readRows, tenantOf, type ReadDeps } from './params.js';

/** How long a client may keep a screenshot: it never changes once written (a day, then revalidated by its ETag). */
export const SCREENSHOT_MAX_AGE_SECONDS = 86_400;

/**
 * GET /api/monitors/{id}/checks/{check_id}/screenshot (docs/api.md): the PNG of a browser
 * check's failure, as `image/png`, to the monitor's tenant only (the route's `known`
 * answers 404 MONITOR_NOT_FOUND for another tenant's monitor; the read is confined to the
 * caller's tenant as well). A check without one (never taken, not yet written, or past
 * SCREENSHOT_RETENTION_DAYS) is 404 SCREENSHOT_NOT_FOUND. `nosniff` and a CSP that allows
 * nothing: the bytes are shown as an image, never run as a document.
 */
export function screenshotRoute(deps: ReadDeps): RequestHandler {
  return async (req, res) => {
    const monitorId = monitorIdOf(req);
    const checkId = String(req.params.checkId);
    if (checkId.length > LIMITS.maxMonitorIdLength || !MONITOR_ID.test(checkId)) {
      throw bad('check_id', `a check id is 1-${LIMITS.maxMonitorIdLength} letters, digits and . _ : -`);
    }
    const [row] = await readRows<ScreenshotReadRow>(deps, req, 'screenshot query', () =>
      screenshotSql(deps.database, deps.layout, { tenantId: tenantOf(res), monitorId, checkId }),
    );
    if (!row) throw new AppError('SCREENSHOT_NOT_FOUND', 'This check has no screenshot (or it is past its retention).');
    const png = Buffer.from(row.png_base64, 'base64');
    res.setHeader('Cache-Control', `private, max-age=${SCREENSHOT_MAX_AGE_SECONDS}`);
    // An API key's answer or a session's (the console's <img>).
    res.setHeader('Vary', 'Authorization, Cookie');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    res.setHeader('Content-Disposition', `inline; filename="${checkId.replace(/[^A-Za-z0-9._-]/g, '_')}.png"`);
    if (answeredNotModified(req, res, `"${createHash('sha1').update(png).digest('base64url')}"`)) return;
    res.type('image/png').send(png);
  };
}
