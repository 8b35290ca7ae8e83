import { isIP } from 'node:net';
import type { RequestHandler, Response } from 'express';
import { AppError, type Mirror } from '@telemetry/platform';
import { RegistryUnavailableError, type VerifiedDomain } from '@telemetry/store';

/**
 * The routing by Host (docs/console.md, "Custom domains"): the operator's own host names
 * get the whole app; a verified custom domain gets its status page and nothing else (no
 * console, no owner API, no other page: the session cookie is host-only, so a custom
 * domain never sees it anyway); any other host name gets 404.
 */

/** A Host header's host name: lower-case, without its port, the brackets of an IPv6 literal or a final dot. */
export function hostOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h.slice(1) : h.slice(1, end);
  }
  // Several colons: an IPv6 literal without brackets (not a valid Host, but not a name either).
  const colon = h.indexOf(':');
  const name = colon >= 0 && h.indexOf(':', colon + 1) < 0 ? h.slice(0, colon) : h;
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** The operator's own host names: PUBLIC_URL's, OPERATOR_HOSTS and `localhost`; IP literals are the operator's too. */
export class OperatorHosts {
  private readonly names: ReadonlySet<string>;

  constructor(publicUrl: string, operatorHosts: readonly string[] | string) {
    // NOTE: an unset list whose default is empty is '' (loadConfig), not [].
    const listed = typeof operatorHosts === 'string' ? [] : operatorHosts;
    const names = ['localhost', new URL(publicUrl).host, ...listed].map(hostOf);
    this.names = new Set(names.filter((n): n is string => n !== undefined && n !== ''));
  }

  /** Whether a request to `host` gets the whole app: an IP literal, or one of the names. */
  serves(host: string): boolean {
    return isIP(host) !== 0 || this.names.has(host);
  }

  /** Whether `hostname` may not be a custom domain: one of the names, or a name under one. */
  covers(hostname: string): boolean {
    if (this.serves(hostname)) return true;
    for (const name of this.names) if (hostname.endsWith(`.${name}`)) return true;
    return false;
  }
}

/** Paths of a custom domain that are its page's: `/history` is `/status/{slug}/history`. */
const PAGE_PATHS = new Set(['/history', '/subscription', '/feed.rss', '/feed.atom']);
/** Liveness and readiness answer on every host name a probe may use. */
const PROBES = new Set(['/healthz', '/readyz']);
/** The files status.html loads (console/static/status.html). */
const STATUS_ASSETS = new Set([
  '/console/status.js',
  '/console/console.css',
  '/console/follow.css',
  '/console/icon.svg',
]);
/** `.` or `..` as a path segment (or written with %2e), and encoded slashes: never on a custom domain. */
const TRICKY = /(^|\/)(\.|%2e){1,2}(\/|$)|%2f|%5c|\\/i;

/**
 * Where a request for `path` on a custom domain of page `slug` goes in the app, or
 * undefined when nothing there is the page's (404). Case matters here (Express matches
 * routes without it): only the exact spellings pass.
 */
export function customDomainPath(path: string, slug: string): string | undefined {
  if (TRICKY.test(path)) return undefined;
  const p = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const page = `/status/${slug}`;
  const api = `/api/status/${slug}`;
  if (p === '/') return page;
  if (PAGE_PATHS.has(p) || p.startsWith('/badges/')) return `${page}${p}`;
  const passes =
    p === page ||
    p.startsWith(`${page}/`) ||
    p === api ||
    p.startsWith(`${api}/`) ||
    p === '/api/status-domain' ||
    PROBES.has(p) ||
    // The page's script, styles and icon; nothing of the console itself.
    STATUS_ASSETS.has(p);
  return passes ? path : undefined;
}

export interface HostRoutingDeps {
  operator: OperatorHosts;
  /** Every verified custom domain by host name (the registry's change feed keeps it current). */
  domains: Mirror<VerifiedDomain>;
}

/** The verified custom domain a request came to (set by hostRouting), if any. */
export function statusDomainOf(res: Response): VerifiedDomain | undefined {
  return res.locals.statusDomain as VerifiedDomain | undefined;
}

/**
 * The first middleware of the app: a request to one of the operator's host names or an IP
 * literal goes on unchanged (one without a Host reaches only the health probes); one to a verified custom domain is
 * rewritten to its page's path (or refused); any other is 404 NOT_FOUND.
 */
export function hostRouting(deps: HostRoutingDeps): RequestHandler {
  return (req, res, next) => {
    const host = hostOf(req.headers.host);
    if (host !== undefined && deps.operator.serves(host)) {
      next();
      return;
    }
    // No Host at all (HTTP/1.0): the health probes only, as on any host that is not ours.
    if (host === undefined) {
      if (PROBES.has(req.path)) next();
      else throw new AppError('NOT_FOUND', 'no such route');
      return;
    }
    if (!deps.domains.loaded) throw new RegistryUnavailableError('the custom domains are not loaded yet; retry');
    const domain = deps.domains.get(host);
    const path = domain && customDomainPath(req.path, domain.slug);
    if (domain === undefined || path === undefined) throw new AppError('NOT_FOUND', 'no such route');
    res.locals.statusDomain = domain;
    if (path !== req.path) {
      const q = req.url.indexOf('?');
      req.url = q < 0 ? path : `${path}${req.url.slice(q)}`;
    }
    next();
  };
}
