import type { Express, Request, Response } from 'express';
import { Feed } from 'feed';
import type { Registry } from 'prom-client';
import { STATUS_FOLLOW_LIMITS } from '@telemetry/contract';
import { methodNotAllowed, rejectUnknown, type Logger, type Mirror, type PgQueryable } from '@telemetry/platform';
import { feedEntries, type FeedEntry, type StoredStatusPage } from '@telemetry/store';
import { storeCall } from '../params.js';
import { countedCaches, keptOf, plainText, publicPageOf, sendKept, type Kept } from './public-answers.js';

export interface FeedRoutesDeps {
  /** Every tenant's pages by slug (an unknown slug never reaches PostgreSQL). */
  directory: Mirror<StoredStatusPage>;
  /** The registry: status_notices. */
  db: PgQueryable;
  /** PUBLIC_URL: the links of the feeds and their entries. */
  publicUrl: string;
  /** How long a feed is answered from memory (and may be kept by readers and proxies): STATUS_PAGE_CACHE_SECONDS. */
  cacheSeconds: number;
  registry: Registry;
  logger: Logger;
}

const FORMATS = {
  rss: { type: 'application/rss+xml; charset=utf-8' },
  atom: { type: 'application/atom+xml; charset=utf-8' },
} as const;
type Format = keyof typeof FORMATS;

/** An entry's id: from its notice alone, so it stays the same across reads, replicas and restarts. */
export function feedEntryId(noticeId: string): string {
  return `urn:telemetry:notice:${noticeId}`;
}

/**
 * A page's feed: its newest notices, newest first. `updated` is the newest entry's time (the
 * page's last change without entries), so an unchanged feed renders to the same bytes and
 * keeps its ETag. Entry titles and texts are what subscribers are sent, plain text: `feed`
 * writes them as HTML (CDATA, Atom type="html"), so they are escaped here and show as typed.
 */
export function pageFeed(page: StoredStatusPage, entries: readonly FeedEntry[], publicUrl: string): Feed {
  const base = publicUrl.replace(/\/+$/, '');
  const link = `${base}/status/${page.slug}`;
  const newest = entries[0];
  const feed = new Feed({
    id: link,
    title: plainText(page.title),
    description: plainText(page.description ?? `Status of ${page.title}`),
    link,
    language: 'en',
    updated: new Date(newest ? newest.createdAtMs : Date.parse(page.updated_at)),
    generator: false,
    feedLinks: { rss: `${link}/feed.rss`, atom: `${link}/feed.atom` },
  });
  for (const e of entries) {
    const at = new Date(e.createdAtMs);
    feed.addItem({
      id: feedEntryId(e.noticeId),
      title: plainText(e.title, true),
      // A report's notices point at it on the history page (by its id); maintenance at the page.
      link: e.reportId ? `${link}/history#${e.reportId}` : link,
      description: plainText(e.body, true),
      date: at,
      published: at,
    });
  }
  return feed;
}

/**
 * GET /status/{slug}/feed.rss (RSS 2.0) and /status/{slug}/feed.atom (Atom 1.0): the page's
 * newest STATUS_FOLLOW_LIMITS.feedEntries notices (docs/console.md, "Feeds and badges").
 * Both are rendered together at most once per cacheSeconds per page and replica, one
 * render at a time (RenderCache, as the public page): a crowd of feed readers reads
 * PostgreSQL once per interval.
 */
export function statusFeedRoutes(app: Express, deps: FeedRoutesDeps): void {
  const rendered = countedCaches<Record<Format, Kept>>(
    deps.registry,
    'status_feed_renders_total',
    'Status page feeds (RSS and Atom together) computed from the registry, by outcome (ok, failed)',
    deps.cacheSeconds,
  )();
  // A page renamed or deleted: its feeds follow at once.
  deps.directory.onChange((slugs) => {
    for (const slug of slugs) rendered.evict(slug);
  });
  const render = async (page: StoredStatusPage): Promise<Record<Format, Kept>> => {
    const entries = await feedEntries(deps.db, page.slug, page.tenant_id, STATUS_FOLLOW_LIMITS.feedEntries);
    const feed = pageFeed(page, entries, deps.publicUrl);
    return { rss: keptOf(feed.rss2()), atom: keptOf(feed.atom1()) };
  };
  const route =
    (format: Format) =>
    async (req: Request, res: Response): Promise<void> => {
      rejectUnknown(req, new Set());
      const page = publicPageOf(req, deps.directory);
      const kept = await storeCall(deps.logger, req, 'status feed', () => rendered.get(page.slug, () => render(page)));
      if (kept.stale) res.setHeader('X-Status-Page-Stale', '1');
      sendKept(req, res, kept.value[format], FORMATS[format].type, (kept.until - Date.now()) / 1000);
    };
  for (const format of Object.keys(FORMATS) as Format[]) {
    app.get(`/status/:slug/feed.${format}`, route(format));
    methodNotAllowed(app, `/status/:slug/feed.${format}`, ['GET', 'HEAD']);
  }
}
