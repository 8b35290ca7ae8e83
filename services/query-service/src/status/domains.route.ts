import { isIP } from 'node:net';
import type { Express, Request, RequestHandler, Response } from 'express';
import { describeErrors, HOSTNAME_PATTERN, ok, type StatusFollowValidators } from '@telemetry/contract';
import { AppError, methodNotAllowed, readJsonBody, rejectUnknown, type Logger, type Mirror } from '@telemetry/platform';
import {
  domainTaken,
  domainTxtRecord,
  domainViewOf,
  type DomainStore,
  type StatusPageStore,
  type StoredDomain,
  type StoredStatusPage,
  type VerifiedDomain,
  type VerifiedKey,
} from '@telemetry/store';
import { recordChange, type Auditor } from '../access/audit.js';
import { storeCall as storeCallOf } from '../params.js';
import { refuseLimited, slugOf, visibleTo } from '../status-pages.route.js';
import { statusDomainOf, type OperatorHosts } from './host.js';
import { TxtLookupError, type TxtLookup } from './txt-lookup.js';

/** What the composition root builds for custom domains. */
export interface CustomDomainDeps {
  store: DomainStore;
  /** Every verified host name (the Host routing reads it; this replica's changes are put at once). */
  verified: Mirror<VerifiedDomain>;
  /** TXT lookups through DOMAIN_RESOLVER, within DOMAIN_VERIFY_TIMEOUT_MS. */
  lookupTxt: TxtLookup;
  validators: Pick<StatusFollowValidators, 'domainCreate'>;
}

export interface DomainRoutesDeps extends CustomDomainDeps {
  pages: StatusPageStore;
  operator: OperatorHosts;
  auth: { read: RequestHandler; write: RequestHandler };
  audit: Auditor;
  logger: Logger;
}

const HOSTNAME = new RegExp(HOSTNAME_PATTERN);

/** A host name as people write it: any case, maybe with the root's final dot. */
function normalized(hostname: string): string {
  const h = hostname.trim().toLowerCase();
  return h.endsWith('.') ? h.slice(0, -1) : h;
}

function hostnameOf(req: Request): string {
  const hostname = normalized(String(req.params.hostname));
  if (!HOSTNAME.test(hostname)) throw notFound(hostname);
  return hostname;
}

function notFound(hostname: string): AppError {
  return new AppError('DOMAIN_NOT_FOUND', `this status page has no custom domain ${hostname}`);
}

/** The audit log's target: the host name (the page is in the recorded fields). */
const target = (d: { hostname: string }) => ({ type: 'custom_domain', id: d.hostname });

/**
 * Custom domains of a status page (docs/api.md, "Custom domains"): the owner claims a host
 * name, publishes the TXT record it is given, and asks for the check; once verified the
 * page answers on that host (host.ts). GET /api/status-domain tells the page's script,
 * on a custom domain, which page it is.
 */
export function domainRoutes(app: Express, deps: DomainRoutesDeps): void {
  const storeCall = <T>(req: Request, what: string, fn: () => Promise<T>): Promise<T> =>
    storeCallOf(deps.logger, req, what, fn);
  const load = async (req: Request, res: Response): Promise<StoredStatusPage> => {
    const slug = slugOf(req);
    const page = await storeCall(req, 'status page lookup', () => deps.pages.get(slug));
    if (!page || !visibleTo(res.locals.key as VerifiedKey, page))
      throw new AppError('STATUS_PAGE_NOT_FOUND', `there is no status page ${slug}`);
    return page;
  };
  const claimOf = async (req: Request, page: StoredStatusPage, hostname: string): Promise<StoredDomain> => {
    const claim = await storeCall(req, 'custom domain lookup', () => deps.store.get(page.slug, hostname));
    if (!claim) throw notFound(hostname);
    return claim;
  };
  const refuseOperators = (hostname: string): void => {
    if (deps.operator.covers(hostname)) {
      throw new AppError(
        'DOMAIN_NOT_ALLOWED',
        `${hostname} is one of this service's own host names or under one; use a host name of your own`,
        { hostname },
      );
    }
  };
  const base = '/api/status-pages/:slug/domains';

  app.get(base, deps.auth.read, async (req, res) => {
    rejectUnknown(req, new Set());
    const page = await load(req, res);
    const claims = await storeCall(req, 'custom domain list', () => deps.store.ofPage(page.slug));
    res.json(ok(claims.map(domainViewOf)));
  });

  app.post(base, deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const page = await load(req, res);
    const given = await readJsonBody(req, { maxBytes: 4096, maxRatio: 100 }, 2);
    if (given !== null && typeof given === 'object' && typeof (given as { hostname?: unknown }).hostname === 'string') {
      const body = given as { hostname: string };
      body.hostname = normalized(body.hostname);
      // The operator's names first (`localhost` has one label, which the schema refuses too);
      // an IP literal is no host name at all (VALIDATION_FAILED).
      if (isIP(body.hostname) === 0 && body.hostname.length <= 253) refuseOperators(body.hostname);
    }
    if (!deps.validators.domainCreate(given)) {
      const problems = describeErrors(deps.validators.domainCreate.errors);
      throw new AppError(
        'VALIDATION_FAILED',
        `the custom domain is not valid: ${problems[0]?.path} ${problems[0]?.message}`,
        {
          problems,
        },
      );
    }
    const { domain, created } = await storeCall(req, 'custom domain insert', () =>
      deps.store.add(page.slug, page.tenant_id, given.hostname),
    );
    const view = domainViewOf(domain);
    // Claimed again: the same claim and token, nothing changed.
    if (created) await recordChange(deps.audit, req, res, 'custom_domain.create', target(domain), undefined, view);
    res.status(created ? 201 : 200).json(ok(view));
  });

  app.post(`${base}/:hostname/verify`, deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const page = await load(req, res);
    const hostname = hostnameOf(req);
    const before = await claimOf(req, page, hostname);
    if (before.verifiedAt !== null) {
      res.json(ok(domainViewOf(before)));
      return;
    }
    // OPERATOR_HOSTS may have grown since the claim was made.
    refuseOperators(hostname);
    // Taken already: no lookup (the update below refuses it too, should two verify at once).
    const owner = await storeCall(req, 'custom domain lookup', () => deps.store.verifiedOwner(hostname));
    if (owner && owner.slug !== page.slug) throw domainTaken(hostname);
    const record = domainTxtRecord(hostname, before.token);
    let problem: string | undefined;
    try {
      const values = await deps.lookupTxt(record.txt_name);
      if (!values.includes(record.txt_value)) {
        problem = values.length === 0 ? 'no TXT record found' : `the TXT records found do not say ${record.txt_value}`;
      }
    } catch (err) {
      if (!(err instanceof TxtLookupError)) throw err;
      problem = err.message;
    }
    const after = await storeCall(req, 'custom domain check', () =>
      deps.store.checked(page.slug, hostname, problem === undefined),
    );
    if (!after) throw notFound(hostname);
    if (problem !== undefined) {
      throw new AppError(
        'DOMAIN_NOT_VERIFIED',
        `${hostname} is not verified: ${problem} at ${record.txt_name}; publish TXT "${record.txt_value}" there and try again`,
        { ...record, reason: problem },
      );
    }
    // This replica routes the host name at once; the others when the change feed tells them.
    deps.verified.put({ hostname, slug: page.slug, tenantId: page.tenant_id });
    const view = domainViewOf(after);
    await recordChange(deps.audit, req, res, 'custom_domain.verify', target(after), domainViewOf(before), view);
    res.json(ok(view));
  });

  app.delete(`${base}/:hostname`, deps.auth.write, async (req, res) => {
    rejectUnknown(req, new Set());
    refuseLimited(res);
    const page = await load(req, res);
    const hostname = hostnameOf(req);
    const before = await claimOf(req, page, hostname);
    const gone = await storeCall(req, 'custom domain delete', () => deps.store.remove(page.slug, hostname));
    if (!gone) throw notFound(hostname);
    // Only this page's verified claim stops the routing (another page's claim is another row).
    if (deps.verified.get(hostname)?.slug === page.slug) deps.verified.remove(hostname);
    await recordChange(deps.audit, req, res, 'custom_domain.delete', target(before), domainViewOf(before), undefined);
    res.json(ok(null));
  });

  // On a custom domain (host.ts): which page it serves. Anywhere else there is none.
  app.get('/api/status-domain', (req, res) => {
    rejectUnknown(req, new Set());
    const domain = statusDomainOf(res);
    if (!domain) throw new AppError('NOT_FOUND', "this host name is not a status page's custom domain");
    res.setHeader('Cache-Control', 'no-cache');
    res.json(ok({ slug: domain.slug }));
  });

  methodNotAllowed(app, base, ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, `${base}/:hostname/verify`, ['POST']);
  methodNotAllowed(app, `${base}/:hostname`, ['DELETE']);
  methodNotAllowed(app, '/api/status-domain', ['GET', 'HEAD']);
}
