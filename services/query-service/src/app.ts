import type { Express, RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import {
  buildOpenApi,
  createDeletionValidator,
  type AlertMessage,
  type ChannelValidators,
  type RunOnceValidators,
  type Validators,
} from '@telemetry/contract';
import type { StatusFollowValidators } from '@telemetry/contract';
import type { AckLinks, ChannelContext } from '@telemetry/alerting';
import {
  methodNotAllowed,
  type ClickHouseClient,
  type ClickHouseReader,
  type EgressPolicy,
  type Logger,
  type Slots,
  type Mirror,
  type PgPool,
  type SecretBox,
  beginApp,
  ByteLru,
  endApp,
} from '@telemetry/platform';
import {
  type ChannelStore,
  type EscalationPolicyStore,
  type EventSchemaStore,
  type IncidentAlertStore,
  type KeyStore,
  type MonitorStore,
  type Scope,
  type StatusPageStore,
  type StoredStatusPage,
} from '@telemetry/store';
import type { ReportStore, TableLayout } from '@telemetry/store';
import type { CheckTail } from './check-tail.js';
import type { PageCache } from './page-cache.js';
import { checksRoute } from './checks.route.js';
import { screenshotRoute } from './screenshots.route.js';
import { incidentsRoute } from './incidents.route.js';
import { webhookDeliveriesRoute } from './webhook-deliveries.route.js';
import { requireMonitor, type MonitorDirectory } from './monitor-directory.js';
import { monitorRoutes, type ChangeNotifier } from './monitors.route.js';
import { runOnceRoutes, type RunOnceAsker } from './run-once.route.js';
import { exportRoute } from './export.route.js';
import { summaryRoute } from './summary.route.js';
import { SummaryBuckets } from './summary-buckets.js';
import { consoleRoutes, type loadConsoleAssets } from './console.route.js';
import { eventsPerMinuteRoute } from './events.route.js';
import { statusPageRoutes } from './status-pages.route.js';
import { statusFeedRoutes } from './status/feeds.route.js';
import { statusBadgeRoutes } from './status/badges.route.js';
import { monitorQuotaOf, type QueryConfig } from './config.js';
import type { ReadDeps } from './params.js';
import { channelRoutes } from './channels.route.js';
import { escalationPolicyRoutes } from './escalation-policies.route.js';
import { eventSchemaRoutes } from './event-schemas.route.js';
import { acknowledgeRoutes } from './acknowledge.route.js';
import { authorize, type AccessDeps, type SessionResolver } from './access/principal.js';
import { cookieSecure } from './access/session-cookie.js';
import type { Auditor } from './access/audit.js';
import { sessionRoutes, type SignInDeps } from './session.route.js';
import { accountRoutes } from './account.route.js';
import { oidcRoutes, type OidcRoutesDeps } from './oidc.route.js';
import { memberRoutes } from './members.route.js';
import { invitationRoutes, type InvitationRoutesDeps } from './invitations.route.js';
import { settingsRoutes } from './settings.route.js';
import { auditRoutes } from './audit.route.js';
import { keyRoutes } from './keys.route.js';
import { deletionRoutes } from './deletions.route.js';
import { domainRoutes, type CustomDomainDeps } from './status/domains.route.js';
import { hostRouting, OperatorHosts } from './status/host.js';
import { subscriberRoutes, type SubscriberRoutesDeps } from './status/subscribers.route.js';
import { reportRoutes } from './status/reports.route.js';
import { configRoutes } from './config-as-code/config.route.js';
import { ConfigEngine } from './config-as-code/engine.js';
import type { ConfigKindModule } from './config-as-code/kind.js';
import { statusPageConfigKind } from './config-as-code/status-pages.js';
import { monitorConfigKind } from './config-as-code/monitors.js';
import { channelConfigKind } from './config-as-code/channels.js';
import { escalationPolicyConfigKind } from './config-as-code/escalation-policies.js';

export interface QueryDeps {
  config: QueryConfig;
  /** Where the ClickHouse data tables are read (layoutOf(config), made once in service.ts). */
  layout: TableLayout;
  logger: Logger;
  registry: Registry;
  keys: Pick<KeyStore, 'authenticate'>;
  /** The exports' own pool, and their slots. */
  exportClient: ClickHouseClient;
  exportSlots: Slots;
  reader: ClickHouseReader;
  validators: Validators;
  /** The hot tail, when TAIL_CHECKS_PER_MONITOR is not 0. */
  tail: CheckTail | undefined;
  /** Deep pages kept for a short time (with the tail, when PAGE_CACHE_CHECKS is not 0). */
  pages: PageCache | undefined;
  monitors: MonitorStore;
  statusPages: StatusPageStore;
  /** Every current status page by slug (the public route reads only this). */
  statusPageDirectory: Mirror<StoredStatusPage>;
  /** Custom domains of status pages: their claims, the verified ones (the Host routing), TXT lookups. */
  customDomains: CustomDomainDeps;
  /** The console's files (console.route.ts). */
  consoleAssets: ReturnType<typeof loadConsoleAssets>;
  directory: MonitorDirectory;
  notifier: ChangeNotifier;
  /** Refuses monitor and webhook URLs that are denied IP literals. */
  policy: EgressPolicy;
  /** Alerting (docs/alerting.md): channels, escalation policies, acknowledgements and their links. */
  channels: ChannelStore;
  policies: EscalationPolicyStore;
  /** Tenants' event schemas (docs/event-schemas.md). */
  eventSchemas: EventSchemaStore;
  incidentAlerts: IncidentAlertStore;
  ackLinks: AckLinks;
  channelValidators: ChannelValidators;
  /** Publishes to the alerts topic; resolves once Kafka acknowledged. */
  publishAlert: (alert: AlertMessage) => Promise<void>;
  /** What a test notification is sent with (this service's egress-bound HTTP client and mailer). */
  channelContext: () => ChannelContext;
  /** People's sessions (access/principal.ts) and the audit log (access/audit.ts). */
  sessions: SessionResolver;
  audit: Auditor;
  /** Password sign-in, TOTP, reset by email, throttling (session.route.ts, account.route.ts). */
  signIn: Omit<SignInDeps, 'access' | 'logger'>;
  /** Single sign-on (oidc.route.ts). */
  oidc: Omit<OidcRoutesDeps, 'audit' | 'logger'>;
  /** Members, invitations and settings (docs/access.md, "Members"). */
  people: Omit<InvitationRoutesDeps, 'auth' | 'audit' | 'access' | 'logger'>;
  /** The registry (PostgreSQL) as this service's role: /api/keys issues and revokes keys with it. */
  pool: PgPool;
  ready: () => boolean;
  details: () => Record<string, boolean>;
  /** Status page subscribers (status/subscribers.route.ts): their store, rate buckets, links and mailer. */
  statusSubscribers: Pick<SubscriberRoutesDeps, 'subscribers' | 'buckets' | 'links' | 'mailer' | 'validators'>;
  /** Status pages people follow (issue 43): the schemas of their inputs, compiled once; status reports. */
  followValidators: StatusFollowValidators;
  statusReports: ReportStore;
  /** Fingerprints of secrets in configuration documents (SECRETS_KEYS; docs/as-code.md). */
  secretBox: SecretBox;
  /** "Run once now": the runners' answers (run-once-client.ts) and the schemas of its body. */
  runOnce: { client: RunOnceAsker; validators: Pick<RunOnceValidators, 'request' | 'settings'> };
}

export function createQueryApp(deps: QueryDeps): Express {
  const operator = new OperatorHosts(deps.config.publicUrl, deps.config.operatorHosts);
  const app = beginApp({
    logger: deps.logger,
    ready: deps.ready,
    details: deps.details,
    registry: deps.registry,
    openapi: buildOpenApi('query'),
    trustedProxies: deps.config.trustedProxies,
    // Before every route: a custom domain reaches its status page only (status/host.ts).
    first: hostRouting({ operator, domains: deps.customDomains.verified }),
  });
  // No CORS headers: this API is for servers and scripts holding an API key, and for the
  // console, which is served from this same origin.
  consoleRoutes(app, deps.consoleAssets);
  const known = requireMonitor(deps.directory, deps.logger);
  // What every read route needs, and the registry's two scopes.
  const read: ReadDeps = {
    reader: deps.reader,
    database: deps.config.clickhouseDatabase,
    layout: deps.layout,
    logger: deps.logger,
    queryTimeoutMs: deps.config.queryTimeoutMs,
  };
  // An API key or a session (docs/access.md), with a scope.
  const access: AccessDeps = {
    keys: deps.keys,
    sessions: deps.sessions,
    audit: deps.audit,
    // CSRF compares Origin with PUBLIC_URL's: behind a TLS proxy req.protocol is http.
    origin: new URL(deps.config.publicUrl).origin,
    secureCookie: cookieSecure(deps.config.publicUrl),
  };
  const auth = (scope: Scope): RequestHandler => authorize(access, scope);
  const registryAuth = { read: auth('monitors:read'), write: auth('monitors:write') };
  const signIn: SignInDeps = { ...deps.signIn, access, logger: deps.logger };
  sessionRoutes(app, signIn);
  accountRoutes(app, signIn);
  const channelsAuth = { read: auth('channels:read'), write: auth('channels:write') };
  monitorRoutes(app, {
    store: deps.monitors,
    directory: deps.directory,
    notifier: deps.notifier,
    policy: deps.policy,
    validators: deps.validators,
    ...read,
    auth: registryAuth,
    known,
    quotaOf: monitorQuotaOf(deps.config),
    minIntervalSeconds: deps.config.minIntervalSeconds,
    heartbeatKey: deps.config.heartbeatKey,
    audit: deps.audit,
  });
  runOnceRoutes(app, {
    store: deps.monitors,
    client: deps.runOnce.client,
    validators: deps.runOnce.validators,
    policy: deps.policy,
    write: registryAuth.write,
    audit: deps.audit,
    logger: deps.logger,
    minIntervalSeconds: deps.config.minIntervalSeconds,
    perMinute: deps.config.runOncePerMinute,
    timeoutCapMs: deps.config.runOnceTimeoutMs,
  });
  app.get(
    '/api/monitors/:id/incidents',
    auth('monitors:read'),
    ...incidentsRoute({
      known,
      acknowledgements: deps.incidentAlerts,
      ...read,
    }),
  );
  app.get(
    '/api/monitors/:id/webhook-deliveries',
    auth('monitors:read'),
    ...webhookDeliveriesRoute({
      known,
      ...read,
    }),
  );
  app.get(
    '/api/monitors/:id/checks',
    auth('checks:read'),
    known,
    checksRoute({
      tail: deps.tail,
      pages: deps.pages,
      reader: deps.reader,
      database: deps.config.clickhouseDatabase,
      layout: deps.layout,
      logger: deps.logger,
      defaultLimit: deps.config.defaultLimit,
      maxLimit: deps.config.maxLimit,
      queryTimeoutMs: deps.config.queryTimeoutMs,
    }),
  );
  // A browser check's failure screenshot (PNG): the same access as the checks it belongs to.
  app.get(
    '/api/monitors/:id/checks/:checkId/screenshot',
    auth('checks:read'),
    known,
    screenshotRoute({ ...read, tail: deps.tail }),
  );
  app.get(
    '/api/monitors/:id/checks/summary',
    auth('checks:read'),
    known,
    summaryRoute({
      closed: new ByteLru(deps.config.summaryCacheBytes),
      buckets: new SummaryBuckets(deps.config.summaryBucketCacheBytes, deps.config.summaryBucketMaxAgeSeconds * 1000),
      ...read,
    }),
  );
  app.get(
    '/api/monitors/:id/checks/export',
    auth('checks:read'),
    known,
    exportRoute({
      client: deps.exportClient,
      slots: deps.exportSlots,
      database: deps.config.clickhouseDatabase,
      layout: deps.layout,
      logger: deps.logger,
      exportTimeoutMs: deps.config.exportTimeoutMs,
      maxRangeDays: deps.config.exportMaxRangeDays,
      maxMemoryBytes: deps.config.exportMaxMemoryBytes,
      stallTimeoutMs: deps.config.exportStallTimeoutMs,
    }),
  );
  const pageHooks = statusPageRoutes(app, {
    store: deps.statusPages,
    directory: deps.statusPageDirectory,
    monitors: deps.monitors,
    validators: deps.validators,
    ...read,
    auth: registryAuth,
    cacheSeconds: deps.config.statusPageCacheSeconds,
    registry: deps.registry,
    audit: deps.audit,
    reports: deps.statusReports,
  });
  // Feeds and badges of public pages (no key): status/feeds.route.ts, status/badges.route.ts.
  const feedHooks = statusFeedRoutes(app, {
    directory: deps.statusPageDirectory,
    db: deps.pool,
    publicUrl: deps.config.publicUrl,
    cacheSeconds: deps.config.statusPageCacheSeconds,
    registry: deps.registry,
    logger: deps.logger,
  });
  reportRoutes(app, {
    ...read,
    reports: deps.statusReports,
    pages: deps.statusPages,
    monitors: deps.monitors,
    validators: deps.followValidators,
    auth: registryAuth,
    audit: deps.audit,
    // A report written here shows at once on this replica's page and feeds (others: within their cache time).
    evict: (slug) => {
      pageHooks.evict(slug);
      feedHooks.evict(slug);
    },
  });
  statusBadgeRoutes(app, {
    directory: deps.statusPageDirectory,
    monitors: deps.monitors,
    ...read,
    cacheSeconds: deps.config.statusPageCacheSeconds,
    registry: deps.registry,
  });
  domainRoutes(app, {
    ...deps.customDomains,
    pages: deps.statusPages,
    operator,
    auth: registryAuth,
    audit: deps.audit,
    logger: deps.logger,
  });
  subscriberRoutes(app, {
    ...deps.statusSubscribers,
    directory: deps.statusPageDirectory,
    pages: deps.statusPages,
    policy: deps.policy,
    http: deps.channelContext,
    publicUrl: deps.config.publicUrl,
    auth: registryAuth,
    audit: deps.audit,
    logger: deps.logger,
    limits: {
      perAddressPerHour: deps.config.subscribePerAddressPerHour,
      perPagePerHour: deps.config.subscribePerPagePerHour,
      linksPerAddressPerHour: deps.config.subscriptionLinksPerAddressPerHour,
      verifyTimeoutMs: deps.config.webhookVerifyTimeoutMs,
    },
  });
  channelRoutes(app, {
    store: deps.channels,
    validators: deps.validators,
    channelValidators: deps.channelValidators,
    policy: deps.policy,
    auth: channelsAuth,
    minDelaySeconds: deps.config.alertMinDelaySeconds,
    publicUrl: deps.config.publicUrl,
    testContext: deps.channelContext,
    testsPerMinute: deps.config.channelTestsPerMinute,
    ...read,
    audit: deps.audit,
  });
  escalationPolicyRoutes(app, {
    store: deps.policies,
    validators: deps.validators,
    logger: deps.logger,
    auth: channelsAuth,
    minDelaySeconds: deps.config.alertMinDelaySeconds,
    audit: deps.audit,
  });
  acknowledgeRoutes(app, {
    incidents: deps.incidentAlerts,
    links: deps.ackLinks,
    publish: deps.publishAlert,
    logger: deps.logger,
    auth: registryAuth,
    audit: deps.audit,
  });
  eventSchemaRoutes(app, {
    store: deps.eventSchemas,
    logger: deps.logger,
    auth: { read: auth('event_schemas:read'), write: auth('event_schemas:write') },
    audit: deps.audit,
  });
  // Monitoring as code (docs/as-code.md): one document for the four kinds, planned and
  // applied in one registry transaction. Each kind is a module beside its routes, with
  // the same rules.
  const configKinds: ConfigKindModule[] = [
    channelConfigKind({
      store: deps.channels,
      validators: deps.validators,
      channelValidators: deps.channelValidators,
      policy: deps.policy,
      minDelaySeconds: deps.config.alertMinDelaySeconds,
      audit: deps.audit,
    }),
    escalationPolicyConfigKind({
      store: deps.policies,
      validators: deps.validators,
      minDelaySeconds: deps.config.alertMinDelaySeconds,
      audit: deps.audit,
    }),
    monitorConfigKind({
      store: deps.monitors,
      directory: deps.directory,
      notifier: deps.notifier,
      quotaOf: monitorQuotaOf(deps.config),
      audit: deps.audit,
      logger: deps.logger,
      validators: deps.validators,
      policy: deps.policy,
      minIntervalSeconds: deps.config.minIntervalSeconds,
      heartbeatKey: deps.config.heartbeatKey,
    }),
    statusPageConfigKind({ store: deps.statusPages, validators: deps.validators, audit: deps.audit, pages: pageHooks }),
  ];
  configRoutes(app, {
    engine: new ConfigEngine({
      pool: deps.pool,
      box: deps.secretBox,
      kinds: configKinds,
      onAfterCommitError: (err) => deps.logger.error('after a configuration apply', { err: String(err) }),
    }),
    auth: {
      read: [auth('monitors:read'), auth('channels:read')],
      write: [auth('monitors:write'), auth('channels:write')],
    },
    audit: deps.audit,
    logger: deps.logger,
  });
  auditRoutes(app, { ...read, auth: auth('audit:read') });
  keyRoutes(app, {
    pool: deps.pool,
    validators: deps.validators,
    audit: deps.audit,
    auth: { read: auth('keys:read'), write: auth('keys:write') },
  });
  // Deletion on request (docs/deletions.md): admins and owners (deletions:read, deletions:write).
  deletionRoutes(app, { pool: deps.pool, audit: deps.audit, auth, validate: createDeletionValidator() });
  oidcRoutes(app, { ...deps.oidc, audit: deps.audit, logger: deps.logger });
  const people = { ...deps.people, auth, audit: deps.audit, access, logger: deps.logger };
  memberRoutes(app, people);
  invitationRoutes(app, people);
  settingsRoutes(app, people);
  app.get(
    '/api/events/per-minute',
    auth('events:read'),
    eventsPerMinuteRoute({
      ...read,
    }),
  );
  for (const path of [
    '/api/status/:slug',
    '/api/events/per-minute',
    '/api/monitors/:id/checks',
    '/api/monitors/:id/checks/summary',
    '/api/monitors/:id/checks/export',
    '/api/monitors/:id/checks/:checkId/screenshot',
    '/api/monitors/:id/incidents',
    '/api/monitors/:id/webhook-deliveries',
    '/api/channels/:id/deliveries',
  ]) {
    methodNotAllowed(app, path, ['GET', 'HEAD']);
  }
  methodNotAllowed(app, '/api/monitors', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/status-pages', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/status-pages/:slug', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  // Before /api/monitors/:id, which its path would match.
  methodNotAllowed(app, '/api/monitors/run-once', ['POST']);
  methodNotAllowed(app, '/api/monitors/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/monitors/:id/webhook-secret', ['POST']);
  methodNotAllowed(app, '/api/channels', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/channels/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/channels/:id/test', ['POST']);
  methodNotAllowed(app, '/api/escalation-policies', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/escalation-policies/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/event-schemas', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/event-schemas/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/event-schemas/:id/versions', ['POST']);
  methodNotAllowed(app, '/api/incidents/:id/acknowledge', ['POST']);
  methodNotAllowed(app, '/api/incidents/:id/unacknowledge', ['POST']);
  methodNotAllowed(app, '/ack/:token', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/session', ['GET', 'HEAD', 'DELETE']);
  for (const path of [
    '/api/session/password',
    '/api/session/sign-out-everywhere',
    '/api/session/tenant',
    '/api/password-resets',
    '/api/password-resets/confirm',
    '/api/me/totp/enable',
  ]) {
    methodNotAllowed(app, path, ['POST']);
  }
  methodNotAllowed(app, '/api/me/password', ['PUT']);
  methodNotAllowed(app, '/api/me/totp', ['POST', 'DELETE']);
  methodNotAllowed(app, '/api/members', ['GET', 'HEAD']);
  methodNotAllowed(app, '/api/members/:person_id', ['PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/invitations', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/invitations/preview', ['GET', 'HEAD']);
  methodNotAllowed(app, '/api/invitations/accept', ['POST']);
  methodNotAllowed(app, '/api/invitations/:id', ['DELETE']);
  methodNotAllowed(app, '/api/settings', ['GET', 'HEAD', 'PATCH']);
  methodNotAllowed(app, '/api/audit', ['GET', 'HEAD']);
  methodNotAllowed(app, '/api/config', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/config/adopt', ['POST']);
  methodNotAllowed(app, '/api/keys', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/keys/:key_id', ['PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/deletions', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/deletions/:id', ['GET', 'HEAD']);
  for (const path of [
    '/api/status/:slug/subscribers',
    '/api/status/:slug/subscribers/confirm',
    '/api/status/:slug/unsubscribe',
  ])
    methodNotAllowed(app, path, ['POST']);
  methodNotAllowed(app, '/api/status-pages/:slug/subscribers', ['GET', 'HEAD']);
  methodNotAllowed(app, '/api/status-pages/:slug/subscribers/:id', ['DELETE']);
  methodNotAllowed(app, '/api/status/:slug/history', ['GET', 'HEAD']);
  methodNotAllowed(app, '/api/status-pages/:slug/reports', ['GET', 'HEAD', 'POST']);
  methodNotAllowed(app, '/api/status-pages/:slug/reports/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  methodNotAllowed(app, '/api/status-pages/:slug/reports/:id/updates', ['POST']);
  return endApp(app, deps.logger, {
    maxBytes: deps.config.discardBodyMaxBytes,
    timeoutMs: deps.config.discardBodyTimeoutMs,
  });
}
