import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import type { Express } from 'express';
import { AppError, answeredNotModified, methodNotAllowed, type Logger } from '@telemetry/platform';

export const SDK_ROUTE = '/sdk/v1.js';

/** The browser SDK's `<script>` build (sdk/browser, docs/sdk.md), read and compressed once. */
export interface SdkBundle {
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

/** Reads sdk/browser/dist/v1.js (`npm run build:sdk`); undefined, with a warning, when it is not built. */
export function loadSdkBundle(logger: Logger): SdkBundle | undefined {
  let body: Buffer;
  try {
    body = readFileSync(createRequire(import.meta.url).resolve('@telemetry/browser/v1.js'));
  } catch {
    logger.warn(`the browser SDK is not built: ${SDK_ROUTE} answers 404 until it is`, { hint: 'npm run build' });
    return undefined;
  }
  return {
    body,
    gzip: gzipSync(body, { level: 9 }),
    etag: `"${createHash('sha1').update(body).digest('base64url')}"`,
  };
}

/**
 * GET /sdk/v1.js: any site may load it (it is public code), from caches for
 * `cacheSeconds` and then revalidated by ETag, gzipped when the browser takes gzip.
 * `v1` changes only compatibly; a breaking change gets /sdk/v2.js.
 */
export function sdkRoute(app: Express, bundle: SdkBundle | undefined, cacheSeconds: number): void {
  app.get(SDK_ROUTE, (req, res) => {
    if (!bundle) throw new AppError('NOT_FOUND', 'the browser SDK is not built on this gateway (npm run build)');
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', `public, max-age=${cacheSeconds}`);
    res.setHeader('Vary', 'Accept-Encoding');
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    const gzip = acceptsGzip(req.get('accept-encoding'));
    // One strong validator per content coding (RFC 9110, 8.8.3).
    if (answeredNotModified(req, res, gzip ? `${bundle.etag.slice(0, -1)}-gz"` : bundle.etag)) return;
    if (gzip) res.setHeader('Content-Encoding', 'gzip');
    const body = gzip ? bundle.gzip : bundle.body;
    // Set by hand: Node leaves it out of a HEAD answer otherwise.
    res.setHeader('Content-Length', String(body.length));
    res.status(200).end(req.method === 'HEAD' ? undefined : body);
  });
  methodNotAllowed(app, SDK_ROUTE, ['GET', 'HEAD']);
}

/** Whether `Accept-Encoding` takes gzip (not `gzip;q=0`). */
function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)/.exec(p)?.[1]).find((v) => v !== undefined);
    return (coding === 'gzip' || coding === 'x-gzip') && (q === undefined || Number(q) > 0);
  });
}
