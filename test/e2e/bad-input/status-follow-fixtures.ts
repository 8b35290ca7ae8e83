/**
 * What the status-follow cases of the bad-input corpus (bad-input/status-follow.ts) name,
 * made by the runner (test/e2e/bad-input.int.test.ts) straight in the run's registry: two
 * pages of the corpus's tenant and one of the foreign tenant, subscribers (active and
 * pending), reports and custom domains (pending, verified, verified by another page); and
 * the loopback servers the webhook cases aim at: a receiver that answers the verification
 * request wrongly (the only address the follow service's egress policy allows) and a trap
 * on another port that every denied notation of loopback names (it must never be reached).
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_TENANT } from '@telemetry/contract';
import type { PgQueryable } from '@telemetry/platform';
import { FOREIGN, FOREIGN_TENANT } from './case.js';

/** The pages: P (m1), O (tenant-a-monitor), F (the foreign tenant's). */
export const FOLLOW = {
  page: 'corpus-follow',
  other: 'corpus-follow-other',
  foreign: 'corpus-follow-foreign',
  subscribers: {
    active: { id: 'sub_corpusactive00000000', email: 'corpus-follow-active@example.com' },
    pending: { id: 'sub_corpuspending0000000', email: 'corpus-follow-pending@example.com' },
    /** Of page O. */
    other: { id: 'sub_corpusother000000000', email: 'corpus-follow-other@example.com' },
  },
  reports: { page: 'rpt_corpusreport00000000', other: 'rpt_corpusother000000000' },
  domains: {
    pending: 'status.corpus-pending.example',
    verified: 'status.corpus-verified.example',
    /** Verified for page O; claimed (not verified) by page P, whose TXT record the resolver has. */
    taken: 'status.corpus-taken.example',
  },
  /** OPERATOR_HOSTS of the follow service. */
  operator: 'corpus-operator.example',
  takenToken: 'corpustakentoken0000000000000000',
} as const;

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** The rows the cases name, in the run's registry (the change feed brings them to the services). */
export async function followFixtures(db: PgQueryable): Promise<void> {
  const F = FOLLOW;
  const pages: [string, string, string][] = [
    [F.page, DEFAULT_TENANT, 'm1'],
    [F.other, DEFAULT_TENANT, 'tenant-a-monitor'],
    [F.foreign, FOREIGN_TENANT, FOREIGN],
  ];
  for (const [slug, tenant, monitor] of pages)
    await db.query(
      `INSERT INTO status_pages (slug, tenant_id, version, title, description, monitor_ids, created_at, updated_at)
       VALUES ($1, $2, 1, $1, NULL, $3, now(), now())`,
      [slug, tenant, [monitor]],
    );
  const subscribers: [{ id: string; email: string }, string, string][] = [
    [F.subscribers.active, F.page, 'active'],
    [F.subscribers.pending, F.page, 'pending'],
    [F.subscribers.other, F.other, 'active'],
  ];
  for (const [s, slug, state] of subscribers)
    await db.query(
      `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, state, confirmed_at)
       VALUES ($1, $2, $3, 'email', $4, $5, $6, CASE WHEN $6 = 'active' THEN now() END)`,
      [s.id, slug, DEFAULT_TENANT, sha256(s.email), s.email, state],
    );
  for (const [id, slug] of [
    [F.reports.page, F.page],
    [F.reports.other, F.other],
  ] as const) {
    await db.query(
      `INSERT INTO status_reports (report_id, slug, tenant_id, title, impact, state) VALUES ($1, $2, $3, $4, 'minor', 'investigating')`,
      [id, slug, DEFAULT_TENANT, `corpus report of ${slug}`],
    );
    await db.query(
      `INSERT INTO status_report_updates (update_id, report_id, state, message, at) VALUES ($1, $2, 'investigating', 'looking', now())`,
      [id.replace('rpt_', 'upd_'), id],
    );
  }
  const domains: [string, string, string, boolean][] = [
    [F.domains.pending, F.page, 'corpuspendingtoken00000000000000', false],
    [F.domains.verified, F.page, 'corpusverifiedtoken0000000000000', true],
    [F.domains.taken, F.other, 'corpusothertoken0000000000000000', true],
    [F.domains.taken, F.page, F.takenToken, false],
  ];
  for (const [hostname, slug, token, verified] of domains)
    await db.query(
      `INSERT INTO custom_domains (hostname, slug, tenant_id, token, verified_at)
       VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END)`,
      [hostname, slug, DEFAULT_TENANT, token, verified],
    );
}

/** A loopback HTTP server that records what it got and answers by `handle`. */
export class LoopbackServer {
  readonly hits: { path: string; headers: IncomingMessage['headers']; body: string }[] = [];
  private readonly servers: Server[] = [];
  private readonly held = new Set<ServerResponse>();
  port = 0;

  constructor(private readonly handle: (path: string, body: string, res: ServerResponse) => void) {}

  /** Listens on 127.0.0.1 (and on ::1 at the same port where the host has IPv6). */
  async start(): Promise<void> {
    const listen = async (host: string, port: number): Promise<Server> => {
      const s = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString();
          this.hits.push({ path: req.url ?? '', headers: req.headers, body });
          this.handle(req.url ?? '', body, res);
        });
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(port, host, resolve);
      });
      this.servers.push(s);
      return s;
    };
    this.port = ((await listen('127.0.0.1', 0)).address() as AddressInfo).port;
    await listen('::1', this.port).catch(() => undefined);
  }

  /** Keeps a response open until stop(): a receiver that never answers in time. */
  hold(res: ServerResponse): void {
    this.held.add(res);
  }

  async stop(): Promise<void> {
    for (const r of this.held) r.destroy();
    await Promise.all(
      this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()).closeAllConnections())),
    );
  }
}

/** The challenge of a verification request ('' when the body is not one). */
function challengeOf(body: string): string {
  try {
    const c = (JSON.parse(body) as { challenge?: unknown }).challenge;
    return typeof c === 'string' ? c : '';
  } catch {
    return '';
  }
}

/**
 * The verification receiver: every path answers the challenge wrongly. `/wrong`: 200 with
 * another text; `/json-wrong`: 200 JSON with another challenge; `/error`: 500 with the
 * challenge; `/empty`: 204; `/slow`: never in time; `/redirect`: 307 to `/echo`, which
 * would answer rightly (a redirect is not followed to verify).
 */
export function challengeReceiver(): LoopbackServer {
  const server: LoopbackServer = new LoopbackServer((path, body, res) => {
    const challenge = challengeOf(body);
    if (path.startsWith('/slow')) return server.hold(res);
    if (path.startsWith('/wrong')) return void res.writeHead(200, { 'content-type': 'text/plain' }).end('no');
    if (path.startsWith('/json-wrong'))
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"challenge":"corpus"}');
    if (path.startsWith('/error')) return void res.writeHead(500, { 'content-type': 'text/plain' }).end(challenge);
    if (path.startsWith('/redirect')) return void res.writeHead(307, { location: '/echo' }).end();
    if (path.startsWith('/echo')) return void res.writeHead(200, { 'content-type': 'text/plain' }).end(challenge);
    res.writeHead(204).end();
  });
  return server;
}

/** The trap: every denied notation of loopback names its port; any request it gets is a failure. */
export function trap(): LoopbackServer {
  return new LoopbackServer((_path, body, res) => {
    const challenge = challengeOf(body);
    // Answers rightly, so a policy that let it through would make a subscriber (and the case fail).
    res.writeHead(200, { 'content-type': 'text/plain' }).end(challenge);
  });
}

/**
 * The reports, updates, subscribers and custom domains of the registry (not when a domain
 * was last looked up: a failed verification may note that), to compare before and after
 * the corpus.
 */
export async function followRows(db: PgQueryable): Promise<Record<string, unknown[]>> {
  const queries = {
    reports: `SELECT report_id, slug, title, impact, monitor_ids, state, draft, updated_at, resolved_at FROM status_reports ORDER BY report_id`,
    updates: `SELECT update_id, report_id, state, message, at FROM status_report_updates ORDER BY update_id`,
    subscribers: `SELECT subscriber_id, slug, kind, address_hash, state, monitor_ids, confirmed_at FROM status_subscribers ORDER BY subscriber_id`,
    domains: `SELECT hostname, slug, token, verified_at FROM custom_domains ORDER BY hostname, slug`,
    notices: `SELECT notice_id FROM status_notices ORDER BY notice_id`,
  };
  const out: Record<string, unknown[]> = {};
  for (const [name, sql] of Object.entries(queries)) out[name] = (await db.query(sql)).rows;
  return out;
}
