import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { MaintenanceWindow, StatusNoticeWebhook } from '@telemetry/contract';
import { createMailer } from '@telemetry/alerting';
import {
  createLogger,
  createPostgres,
  EgressPolicy,
  httpCall,
  inTransaction,
  LineCollector,
  parseSealingKeys,
  type PgPool,
} from '@telemetry/platform';
import {
  createTenant,
  insertNotice,
  newStatusId,
  sealSubscriberWebhook,
  StatusDeliveryStore,
  StatusPageStore,
  SubscriptionLinks,
} from '@telemetry/store';
import { StatusDeliverer, type StatusDelivererDeps } from '../../services/check-runner/src/status-delivery.js';
import { StatusMaintenance } from '../../services/check-runner/src/status-maintenance.js';
import { RUN_SECRETS_KEYS, runSecretBox } from '../../harness/processes.js';
import { adminRegistry, eventually, mailpitSmtpUrl, runRunner, testStack, uid } from '../support/fixtures.js';
import { runMailpit, type MailpitClient } from '../support/mailpit.js';

/**
 * The check runner's delivery of status-page notices to subscribers (docs/console.md,
 * "Delivery"), on the run's PostgreSQL as the runner's own role, the run's Mailpit and a
 * loopback webhook receiver: each active subscriber the notice concerns gets it once,
 * retried on 5xx, given up on 410, once with two deliverers at once; maintenance notices
 * made once and delivered; and the runner's composition root wires it.
 */

const PUBLIC_URL = 'http://status.example.test';
const links = new SubscriptionLinks(parseSealingKeys(RUN_SECRETS_KEYS), PUBLIC_URL);

interface Call {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

/** A loopback webhook receiver: each path answers the statuses of its script in turn (the last one thereafter; 200 unscripted). */
class Receiver {
  readonly calls: Call[] = [];
  private readonly scripts = new Map<string, number[]>();
  private server!: Server;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const script = this.scripts.get(path) ?? [200];
        const status = script.length > 1 ? script.shift()! : script[0]!;
        this.calls.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), status });
        res.writeHead(status, { 'Content-Type': 'text/plain' }).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  url(path: string, ...statuses: number[]): string {
    if (statuses.length > 0) this.scripts.set(path, statuses);
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  to(path: string): Call[] {
    return this.calls.filter((c) => c.path === path);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Checks `X-Telemetry-Signature: t=…,v1=…` of a call against `secret`. */
function signedBy(call: Call, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(call.headers['x-telemetry-signature']));
  if (!m) return false;
  return createHmac('sha256', secret).update(`${m[1]}.${call.body}`).digest('hex') === m[2];
}

describe('status-page notices delivered by the check runner (real PostgreSQL, Mailpit, loopback webhooks)', function () {
  this.timeout(60_000);
  const lines = new LineCollector();
  const logger = createLogger({ service: 'test', level: 'info', stream: lines });
  const policy = new EgressPolicy({ allow: ['127.0.0.1/32'] });
  const receiver = new Receiver();
  const owner = (): PgPool => adminRegistry();
  let runnerPool: PgPool;
  let mailpit: MailpitClient;
  let tenant: string;
  const [monA, monB] = [`mon_${uid('a').slice(2)}`, `mon_${uid('b').slice(2)}`];

  const deliverer = (over: Partial<StatusDelivererDeps> = {}): StatusDeliverer =>
    new StatusDeliverer({
      store: new StatusDeliveryStore(runnerPool),
      mail: createMailer({ smtpUrl: mailpitSmtpUrl(), mailFrom: 'Status <status@example.test>' }, { policy, logger }),
      http: (call) => httpCall({ ...call, policy }),
      box: runSecretBox(),
      links,
      publicUrl: PUBLIC_URL,
      logger,
      registry: new Registry(),
      userAgent: 'test',
      timeoutMs: 5000,
      intervalMs: 100,
      maxAttempts: 4,
      retryBaseMs: 50,
      leaseSeconds: 30,
      ...over,
    });

  /** A page of the tenant with monitors A and B. */
  async function page(): Promise<string> {
    const slug = uid('page');
    const at = new Date().toISOString();
    await new StatusPageStore(owner()).create({
      slug,
      tenant_id: tenant,
      title: `Page ${slug}`,
      description: null,
      monitor_ids: [monA, monB],
      created_at: at,
      updated_at: at,
    });
    return slug;
  }

  async function subscribeEmail(slug: string, state: 'active' | 'pending', monitorIds: string[] = []) {
    const id = newStatusId('sub');
    const email = `${uid('reader')}@example.test`;
    await owner().query(
      `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, email, monitor_ids, state)
       VALUES ($1, $2, $3, 'email', $4, $5, $6, $7)`,
      [id, slug, tenant, createHash('sha256').update(email).digest('hex'), email, monitorIds, state],
    );
    return { id, email };
  }

  async function subscribeWebhook(slug: string, url: string) {
    const id = newStatusId('sub');
    const secret = `whsec_${uid('s')}`;
    await owner().query(
      `INSERT INTO status_subscribers (subscriber_id, slug, tenant_id, kind, address_hash, webhook_sealed, webhook_origin, state)
       VALUES ($1, $2, $3, 'webhook', $4, $5, $6, 'active')`,
      [
        id,
        slug,
        tenant,
        createHash('sha256').update(url).digest('hex'),
        sealSubscriberWebhook(runSecretBox(), id, { url, secret }),
        new URL(url).origin,
      ],
    );
    return { id, secret, url };
  }

  async function notice(slug: string, title: string, monitorIds = [monA]): Promise<string> {
    const made = await inTransaction(owner(), (tx) =>
      insertNotice(tx, {
        slug,
        tenantId: tenant,
        kind: 'report_opened',
        monitorIds,
        title,
        body: `${title}: we are looking into it.`,
        payload: { update: { id: newStatusId('upd'), state: 'investigating', message: 'looking', at: '' } },
      }),
    );
    return made!.noticeId;
  }

  async function rows(noticeId: string) {
    const { rows: r } = await owner().query<{
      subscriber_id: string;
      state: string;
      attempts: number;
      last_error: string;
    }>('SELECT subscriber_id, state, attempts, last_error FROM status_deliveries WHERE notice_id = $1', [noticeId]);
    return new Map(r.map((x) => [x.subscriber_id, x]));
  }

  before(async () => {
    tenant = (await createTenant(owner(), uid('tenant'))).tenant_id;
    runnerPool = createPostgres(
      { databaseUrl: testStack().users.postgres!.runner, databasePoolMax: 4, databaseTimeoutMs: 10_000 },
      logger,
      'runner-test',
    );
    mailpit = runMailpit();
    await receiver.start();
  });

  after(async () => {
    await runnerPool?.end();
    await receiver.stop();
  });

  it('tells each active subscriber the notice concerns once (mail with one-click unsubscribe, signed webhook); nobody else', async () => {
    const slug = await page();
    const active = await subscribeEmail(slug, 'active');
    const pending = await subscribeEmail(slug, 'pending');
    const other = await subscribeEmail(slug, 'active', [monB]);
    const hook = await subscribeWebhook(slug, receiver.url(`/hook/${slug}`));
    const id = await notice(slug, 'Checkout is slow');
    expect([...(await rows(id)).keys()]).to.have.members([active.id, hook.id]);

    await deliverer().drain();

    const [mail, ...more] = await mailpit.waitFor(`to:${active.email}`);
    expect(more).to.have.length(0);
    expect(mail!.Subject).to.equal('Checkout is slow');
    expect(mail!.Text).to.contain('Checkout is slow: we are looking into it.');
    expect(mail!.Text).to.contain(`${PUBLIC_URL}/status/${slug}`);
    expect(mail!.Text).to.contain(links.unsubscribeLink(slug, active.id));
    const headers = links.mailHeaders(slug, active.id);
    expect(mail!.headers['List-Unsubscribe']).to.deep.equal([headers['List-Unsubscribe']]);
    expect(mail!.headers['List-Unsubscribe-Post']).to.deep.equal(['List-Unsubscribe=One-Click']);
    expect(await mailpit.search(`to:${pending.email}`)).to.have.length(0);
    expect(await mailpit.search(`to:${other.email}`)).to.have.length(0);

    const calls = receiver.to(`/hook/${slug}`);
    expect(calls).to.have.length(1);
    expect(signedBy(calls[0]!, hook.secret)).to.equal(true);
    expect(signedBy(calls[0]!, 'whsec_other')).to.equal(false);
    expect(calls[0]!.headers['x-telemetry-event']).to.equal(id);
    const body = JSON.parse(calls[0]!.body) as StatusNoticeWebhook;
    expect(body).to.deep.include({ id, type: 'report_opened', title: 'Checkout is slow' });
    expect(body.page).to.deep.equal({ slug, title: `Page ${slug}`, url: `${PUBLIC_URL}/status/${slug}` });
    expect(body.update?.state).to.equal('investigating');
    for (const r of (await rows(id)).values()) expect(r).to.deep.include({ state: 'delivered', attempts: 1 });
    // Nothing of it is due any more: another round sends nothing.
    await deliverer().drain();
    expect(receiver.to(`/hook/${slug}`)).to.have.length(1);
    expect(await mailpit.search(`to:${active.email}`)).to.have.length(1);
  });

  it('tries a 500 again after its backoff and delivers once; gives a 410 up at once', async () => {
    const slug = await page();
    const flaky = await subscribeWebhook(slug, receiver.url(`/flaky/${slug}`, 500, 200));
    const gone = await subscribeWebhook(slug, receiver.url(`/gone/${slug}`, 410));
    const id = await notice(slug, 'Payments degraded');
    const registry = new Registry();
    const d = deliverer({ registry });

    await d.round();
    const first = await rows(id);
    expect(first.get(flaky.id)).to.deep.include({ state: 'pending', attempts: 1, last_error: 'status 500' });
    expect(first.get(gone.id)).to.deep.include({ state: 'failed', attempts: 1, last_error: 'status 410' });

    await eventually('the 500 tried again and delivered', async () => {
      await d.round();
      return (await rows(id)).get(flaky.id)?.state === 'delivered' ? true : undefined;
    });
    const calls = receiver.to(`/flaky/${slug}`);
    expect(calls.map((c) => c.status)).to.deep.equal([500, 200]);
    expect(calls.map((c) => c.headers['x-telemetry-event'])).to.deep.equal([id, id]);
    expect(calls.map((c) => c.headers['x-telemetry-attempt'])).to.deep.equal(['1', '2']);
    expect(receiver.to(`/gone/${slug}`)).to.have.length(1);
    expect((await rows(id)).get(flaky.id)).to.deep.include({ attempts: 2, last_error: '' });
    const metric = await registry.getSingleMetric('status_notifications_total')!.get();
    const value = (outcome: string): number =>
      metric.values.find((v) => v.labels.kind === 'webhook' && v.labels.outcome === outcome)?.value ?? 0;
    expect([value('delivered'), value('retry'), value('failed')]).to.deep.equal([1, 1, 1]);
  });

  it('gives up after STATUS_DELIVERY_ATTEMPTS', async () => {
    const slug = await page();
    const down = await subscribeWebhook(slug, receiver.url(`/down/${slug}`, 503));
    const id = await notice(slug, 'Still down');
    const d = deliverer({ maxAttempts: 2, retryBaseMs: 10 });
    await eventually('given up', async () => {
      await d.round();
      return (await rows(id)).get(down.id)?.state === 'failed' ? true : undefined;
    });
    expect((await rows(id)).get(down.id)).to.deep.include({ attempts: 2, last_error: 'status 503' });
    expect(receiver.to(`/down/${slug}`)).to.have.length(2);
  });

  it('sends each delivery once with two deliverers at once, and skips a subscriber deleted meanwhile', async () => {
    const slug = await page();
    const readers = await Promise.all([1, 2, 3, 4, 5, 6].map(() => subscribeEmail(slug, 'active')));
    const hook = await subscribeWebhook(slug, receiver.url(`/pair/${slug}`));
    const gone = await subscribeEmail(slug, 'active');
    const ids = [await notice(slug, 'First'), await notice(slug, 'Second')];
    await owner().query('DELETE FROM status_subscribers WHERE subscriber_id = $1', [gone.id]);
    const [a, b] = [deliverer({ batch: 3 }), deliverer({ batch: 3 })];
    await Promise.all([a.drain(), b.drain()]);

    for (const r of readers) {
      const mails = await mailpit.waitFor(`to:${r.email}`, 2);
      expect(mails.map((m) => m.Subject).sort()).to.deep.equal(['First', 'Second']);
    }
    expect(await mailpit.search(`to:${gone.email}`)).to.have.length(0);
    const pair = receiver.to(`/pair/${slug}`);
    expect(pair.every((c) => signedBy(c, hook.secret))).to.equal(true);
    const events = pair.map((c) => c.headers['x-telemetry-event']);
    expect(events.sort()).to.deep.equal([...ids].sort());
    for (const id of ids) {
      const r = await rows(id);
      expect(r.size).to.equal(7);
      for (const x of r.values()) expect(x).to.deep.include({ state: 'delivered', attempts: 1 });
    }
  });

  it("leaves a dead runner's claim to its lease, then another sends it", async () => {
    const slug = await page();
    const reader = await subscribeEmail(slug, 'active');
    const id = await notice(slug, 'Lease test');
    const dead = await new StatusDeliveryStore(runnerPool).claimDue(10, 1);
    expect(dead.map((x) => x.noticeId)).to.include(id);
    const d = deliverer();
    await d.round();
    expect((await rows(id)).get(reader.id)).to.deep.include({ state: 'pending', attempts: 0 });
    await eventually('claimed again after the lease', async () => {
      await d.round();
      return (await rows(id)).get(reader.id)?.state === 'delivered' ? true : undefined;
    });
    // The dead runner's late write-back changes nothing.
    expect(await new StatusDeliveryStore(runnerPool).delivered(dead.find((x) => x.noticeId === id)!)).to.equal(false);
    expect(await mailpit.waitFor(`to:${reader.email}`)).to.have.length(1);
    expect((await rows(id)).get(reader.id)).to.deep.include({ state: 'delivered', attempts: 1 });
  });

  it('makes maintenance notices once across runners (scheduled, started) and delivers them', async () => {
    const slug = await page();
    const reader = await subscribeEmail(slug, 'active', [monA]);
    const hook = await subscribeWebhook(slug, receiver.url(`/maint/${slug}`));
    const now = Date.now();
    const minute = 60_000;
    const iso = (ms: number): string => new Date(Math.floor(ms / minute) * minute).toISOString();
    const started = { from: iso(now - 10 * minute), to: iso(now + 50 * minute), message: 'Database upgrade' };
    const soon = { from: iso(now + 2 * 60 * minute), to: iso(now + 3 * 60 * minute) };
    const windows: MaintenanceWindow[] = [
      started,
      soon,
      // Beyond the look-ahead: not yet.
      { from: iso(now + 30 * 60 * minute), to: iso(now + 31 * 60 * minute) },
    ];
    const monitor = { id: monA, tenant_id: tenant, name: 'Checkout API', maintenance_windows: windows };
    const runner = () =>
      new StatusMaintenance({
        pool: runnerPool,
        pages: async () => (await new StatusPageStore(runnerPool).all()).filter((p) => p.slug === slug),
        monitor: (id) => (id === monA ? monitor : undefined),
        noticeHours: 24,
        intervalMs: 60_000,
        logger,
      });
    const [one, two] = [runner(), runner()];
    const made = await Promise.all([one.sweep(), two.sweep()]);
    expect(made[0] + made[1]).to.equal(2);
    expect(await runner().sweep()).to.equal(0);
    const { rows: notices } = await owner().query<{ kind: string; title: string; body: string; dedup_key: string }>(
      'SELECT kind, title, body, dedup_key FROM status_notices WHERE slug = $1 ORDER BY kind',
      [slug],
    );
    expect(notices.map((n) => n.kind)).to.deep.equal(['maintenance_scheduled', 'maintenance_started']);
    expect(notices[1]!.title).to.equal('Maintenance in progress: Checkout API');
    expect(notices[1]!.body).to.contain(
      `${iso(now - 10 * minute)
        .slice(0, 16)
        .replace('T', ' ')} UTC`,
    );
    expect(notices[1]!.body).to.contain('Database upgrade');
    expect(notices[0]!.title).to.equal('Scheduled maintenance: Checkout API');
    expect(notices[0]!.dedup_key).to.equal(
      `maintenance:${slug}:${monA}:${Date.parse(soon.from)}:maintenance_scheduled`,
    );

    await deliverer().drain();
    const mails = await mailpit.waitFor(`to:${reader.email}`, 2);
    expect(mails.map((m) => m.Subject).sort()).to.deep.equal([
      'Maintenance in progress: Checkout API',
      'Scheduled maintenance: Checkout API',
    ]);
    const maint = receiver.to(`/maint/${slug}`);
    expect(maint.every((c) => signedBy(c, hook.secret))).to.equal(true);
    const bodies = maint.map((c) => JSON.parse(c.body) as StatusNoticeWebhook);
    expect(bodies).to.have.length(2);
    const inProgress = bodies.find((b) => b.type === 'maintenance_started')!;
    expect(inProgress.maintenance).to.deep.equal({
      monitor: { id: monA, name: 'Checkout API' },
      starts_at: new Date(started.from).toISOString(),
      ends_at: new Date(started.to).toISOString(),
      in_progress: true,
      message: 'Database upgrade',
    });
  });

  it("runs in the check runner's composition root", async () => {
    const slug = await page();
    const reader = await subscribeEmail(slug, 'active');
    const id = await notice(slug, 'From the runner');
    const runner = await runRunner({ STATUS_DELIVERY_INTERVAL_MS: '100', PUBLIC_URL });
    try {
      const [mail] = await mailpit.waitFor(`to:${reader.email}`);
      expect(mail!.Subject).to.equal('From the runner');
      expect(mail!.headers['List-Unsubscribe-Post']).to.deep.equal(['List-Unsubscribe=One-Click']);
      await eventually('delivered', async () =>
        (await rows(id)).get(reader.id)?.state === 'delivered' ? true : undefined,
      );
      const metrics = await (await fetch(`${runner.url}/metrics`)).text();
      expect(metrics).to.match(/status_notifications_total\{kind="email",outcome="delivered"[^}]*\} [1-9]/);
    } finally {
      await runner.stop();
    }
  });
});
