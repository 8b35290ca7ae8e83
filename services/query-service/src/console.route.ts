import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Express, Request, Response } from 'express';
import { STATUS_PAGE_SLUG_PATTERN } from '@telemetry/contract';
import { answeredNotModified, methodNotAllowed, type Logger } from '@telemetry/platform';

/**
 * The web console (docs/console.md): static files we build and serve ourselves, from the
 * same origin as the API, so that it runs where the service runs, without internet.
 * `console/static` holds the pages and styles, `console/dist` the two bundles esbuild makes
 * of the TypeScript (`npm run build:console`), and uPlot comes from its npm package.
 */

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Only our own files, no inline script or style, no frames: a page that showed a
 * monitor's name could otherwise run what someone typed into it.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const etagOf = (body: Buffer): string => `"${createHash('sha1').update(body).digest('base64url')}"`;

function asset(file: string): Asset {
  const body = readFileSync(file);
  return { body, type: TYPES[extname(file)] ?? 'application/octet-stream', etag: etagOf(body) };
}

const SLUG = new RegExp(STATUS_PAGE_SLUG_PATTERN);
const FEEDS_MARK = /<!-- feeds:.*?-->/;

/**
 * A public page's HTML with its feeds' `<link rel="alternate">` written in, for feed
 * readers (which do not run the page's script) to find them: under `base`, the page's
 * path (`/status/{slug}`, or '' on its custom domain). A slug is letters, digits and
 * hyphens (else no links), so it needs no escaping.
 */
function statusHtml(template: Asset, slug: string, base: string): Asset {
  const links = SLUG.test(slug)
    ? `<link rel="alternate" type="application/rss+xml" title="Status updates (RSS)" href="${base}/feed.rss" />\n    ` +
      `<link rel="alternate" type="application/atom+xml" title="Status updates (Atom)" href="${base}/feed.atom" />`
    : '';
  const body = Buffer.from(template.body.toString('utf8').replace(FEEDS_MARK, links));
  return { body, type: template.type, etag: etagOf(body) };
}

/** The console's files by URL path, read once at start (they are small). */
export function loadConsoleAssets(logger: Logger): Map<string, Asset> {
  const root = fileURLToPath(new URL('../console/', import.meta.url));
  const out = new Map<string, Asset>();
  const add = (dir: string, pattern: RegExp): void => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir)) if (pattern.test(name)) out.set(`/console/${name}`, asset(join(dir, name)));
  };
  add(join(root, 'static'), /\.(css|svg|html)$/);
  add(join(root, 'dist'), /\.js$/);
  const uplot = dirname(createRequire(import.meta.url).resolve('uplot'));
  out.set('/console/vendor/uPlot.iife.min.js', asset(join(uplot, 'uPlot.iife.min.js')));
  out.set('/console/vendor/uPlot.min.css', asset(join(uplot, 'uPlot.min.css')));
  if (!out.has('/console/main.js')) {
    logger.warn('the console is not built: / answers 404 until it is', { hint: 'npm run build:console' });
  }
  return out;
}

function send(req: Request, res: Response, a: Asset): void {
  res.setHeader('Content-Type', a.type);
  // Revalidated on every load (a 304 while unchanged): a new release shows at once.
  res.setHeader('Cache-Control', 'no-cache');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', CSP);
  res.setHeader('Referrer-Policy', 'no-referrer');
  if (!answeredNotModified(req, res, a.etag)) res.send(a.body);
}

/**
 * GET / and /console/ (the console), /status/{slug} (a public status page) with its
 * /history and /subscription, and /console/* (their files).
 */
export function consoleRoutes(app: Express, assets: Map<string, Asset>): void {
  const page =
    (path: string) =>
    (req: Request, res: Response, next: () => void): void => {
      const a = assets.get(path);
      if (a && assets.has('/console/main.js')) send(req, res, a);
      else next();
    };
  app.get('/', page('/console/index.html'));
  // Emailed links (invitations, password resets) and single sign-on come back to /console/#/….
  app.get('/console/', page('/console/index.html'));
  // The public pages: one HTML, its script draws what the path asks for (console/src/status.ts).
  const statusPage = (req: Request<{ slug: string }>, res: Response, next: () => void): void => {
    const template = assets.get('/console/status.html');
    if (!template || !assets.has('/console/main.js')) return next();
    const slug = req.params.slug;
    // On a custom domain the host routing made `/` into this path: the page's own paths start at ''.
    const base = req.originalUrl.startsWith('/status/') ? `/status/${slug}` : '';
    send(req, res, statusHtml(template, slug, base));
  };
  const statusPaths = ['/status/:slug', '/status/:slug/history', '/status/:slug/subscription'];
  for (const path of statusPaths) app.get(path, statusPage);
  app.get('/console/*file', (req, res, next) => {
    const a = assets.get(req.path);
    if (a) send(req, res, a);
    else next();
  });
  methodNotAllowed(app, '/', ['GET', 'HEAD']);
  for (const path of statusPaths) methodNotAllowed(app, path, ['GET', 'HEAD']);
}
