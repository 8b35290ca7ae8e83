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
    if (answeredNotModified(req, res, bundle.etag)) return;
    const gzip = /\bgzip\b/i.test(req.get('accept-encoding') ?? '');
    if (gzip) res.setHeader('Content-Encoding', 'gzip');
    res.status(200).end(gzip ? bundle.gzip : bundle.body);
  });
  methodNotAllowed(app, SDK_ROUTE, ['GET', 'HEAD']);
}
