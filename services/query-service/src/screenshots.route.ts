import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { LIMITS } from '@telemetry/contract';
import { AppError, answeredNotModified, bad } from '@telemetry/platform';
import { screenshotSql, type ScreenshotReadRow } from '@telemetry/store';
import { MONITOR_ID, monitorIdOf, readRows, tenantOf, type ReadDeps } from './params.js';

/** How long a client may keep a screenshot: it never changes once written (a day, then revalidated by its ETag). */
export const SCREENSHOT_MAX_AGE_SECONDS = 86_400;

/**
 * How long the route waits for a screenshot the check history already announces (a check
 * served from the hot tail, read from Kafka, whose screenshot the stream consumer has not
 * stored yet): it reads again every SCREENSHOT_POLL_MS until then, instead of a 404 the
 * console would show as a broken image.
 */
export const SCREENSHOT_PENDING_WAIT_MS = 10_000;
const SCREENSHOT_POLL_MS = 250;

export interface ScreenshotRouteDeps extends ReadDeps {
  /** The hot tail (absent when TAIL_CHECKS_PER_MONITOR is 0): does it announce this check's screenshot? */
  tail: { announcesScreenshot(tenantId: string, monitorId: string, checkId: string): boolean } | undefined;
}

/**
 * GET /api/monitors/{id}/checks/{check_id}/screenshot (docs/api.md): the PNG of a browser
 * check's failure, as `image/png`, to the monitor's tenant only (the route's `known`
 * answers 404 MONITOR_NOT_FOUND for another tenant's monitor; the read is confined to the
 * caller's tenant as well). A check without one (never taken, not yet written, or past
 * SCREENSHOT_RETENTION_DAYS) is 404 SCREENSHOT_NOT_FOUND. `nosniff` and a CSP that allows
 * nothing: the bytes are shown as an image, never run as a document.
 */
export function screenshotRoute(deps: ScreenshotRouteDeps): RequestHandler {
  return async (req, res) => {
    const monitorId = monitorIdOf(req);
    const checkId = String(req.params.checkId);
    if (checkId.length > LIMITS.maxMonitorIdLength || !MONITOR_ID.test(checkId)) {
      throw bad('check_id', `a check id is 1-${LIMITS.maxMonitorIdLength} letters, digits and . _ : -`);
    }
    const tenantId = tenantOf(res);
    const read = async (): Promise<ScreenshotReadRow | undefined> =>
      (
        await readRows<ScreenshotReadRow>(deps, req, 'screenshot query', () =>
          screenshotSql(deps.database, deps.layout, { tenantId, monitorId, checkId }),
        )
      )[0];
    let row = await read();
    if (!row && deps.tail?.announcesScreenshot(tenantId, monitorId, checkId)) {
      const deadline = Date.now() + SCREENSHOT_PENDING_WAIT_MS;
      while (!row && Date.now() < deadline && !req.socket.destroyed) {
        await new Promise((r) => setTimeout(r, SCREENSHOT_POLL_MS));
        row = await read();
      }
    }
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
