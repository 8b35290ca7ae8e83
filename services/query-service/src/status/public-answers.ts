import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { STATUS_PAGE_LIMITS, STATUS_PAGE_SLUG_PATTERN } from '@telemetry/contract';
import { Counter, type Registry } from 'prom-client';
import { AppError, answeredNotModified, type Mirror } from '@telemetry/platform';
import { RegistryUnavailableError, type StoredStatusPage } from '@telemetry/store';
import { RenderCache } from '../render-cache.js';

/**
 * What the public feeds and badges of a status page share: the page from the directory
 * (never PostgreSQL: an unknown slug costs nothing), and an answer kept in memory, sent with
 * its ETag and a public max-age.
 */

const SLUG = new RegExp(STATUS_PAGE_SLUG_PATTERN);

/** The page `req.params.slug` names, from the pages' directory; 404 STATUS_PAGE_NOT_FOUND otherwise. */
export function publicPageOf(req: Request, directory: Mirror<StoredStatusPage>): StoredStatusPage {
  const slug = String(req.params.slug);
  if (slug.length > STATUS_PAGE_LIMITS.maxSlugLength || !SLUG.test(slug)) {
    throw new AppError('STATUS_PAGE_NOT_FOUND', 'there is no such status page');
  }
  if (!directory.loaded) throw new RegistryUnavailableError('the status pages are not loaded yet; retry');
  const page = directory.get(slug);
  if (!page) throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
  return page;
}

/**
 * Makes RenderCaches that keep what they render for `cacheSeconds` (and try a failed render
 * again no sooner), all counted in one counter `name{outcome="ok"|"failed"}`.
 */
export function countedCaches<T>(
  registry: Registry,
  name: string,
  help: string,
  cacheSeconds: number,
): () => RenderCache<T> {
  const renders = new Counter({ name, help, labelNames: ['outcome'], registers: [registry] });
  const ttlMs = cacheSeconds * 1000;
  return () => new RenderCache<T>(ttlMs, ttlMs, (outcome) => renders.inc({ outcome }));
}

/** A rendered answer and its entity tag. */
export interface Kept {
  body: string;
  etag: string;
}

export function keptOf(body: string): Kept {
  return { body, etag: `"${createHash('sha1').update(body).digest('base64url')}"` };
}

/**
 * Sends a kept answer as `type`, cacheable by anyone for `maxAgeSeconds`, or 304 when
 * If-None-Match names its tag.
 */
export function sendKept(req: Request, res: Response, kept: Kept, type: string, maxAgeSeconds: number): void {
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', `public, max-age=${Math.max(0, Math.floor(maxAgeSeconds))}`);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (!answeredNotModified(req, res, kept.etag)) res.send(kept.body);
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Text made safe for XML 1.0 (no control characters it forbids, no lone surrogates) and,
 * with `html`, escaped for an element a reader takes as HTML: what people typed is shown as
 * text, never as markup.
 */
export function plainText(text: string, html = false): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|\p{Cs}/gu, '\ufffd');
  if (!html) return clean;
  return clean.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}
