import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import type { Answer, Mailer } from '../../libs/alerting/src/index.js';
import { createLogger } from '../../libs/platform/src/index.js';
import { SecretBox } from '../../libs/platform/src/secret-box.js';
import { deliveryBackoffMs, type ClaimedDelivery } from '../../libs/store/src/status/deliveries.js';
import { sealSubscriberWebhook, SubscriptionLinks } from '../../libs/store/src/status/subscription-links.js';
import { StatusDeliverer } from '../../services/check-runner/src/status-delivery.js';
import { maintenanceNotice } from '../../services/check-runner/src/status-maintenance.js';

const ring = [{ id: 'k1', key: randomBytes(32) }];
const box = new SecretBox(ring);
const sub = `sub_${'a'.repeat(20)}`;

function claimed(over: Partial<ClaimedDelivery> = {}): ClaimedDelivery {
  return {
    noticeId: `ntc_${'b'.repeat(20)}`,
    subscriberId: sub,
    attempts: 0,
    lease: 'fence',
    slug: 'shop',
    pageTitle: 'Shop status',
    kind: 'webhook',
    email: null,
    webhookSealed: sealSubscriberWebhook(box, sub, { url: 'https://hooks.example.test/x', secret: 'whsec_x' }),
    notice: {
      kind: 'report_opened',
      title: 'Down',
      body: 'It is down.',
      payload: {},
      createdAt: '2026-11-26T12:00:00.000Z',
    },
    ...over,
  };
}

/** A deliverer whose store records what it was told and whose HTTP answers `answer`. */
function harness(answer: { statusCode: number; headers?: Record<string, string> } | Error, maxAttempts = 5) {
  const told: string[] = [];
  const store = {
    claimDue: () => Promise.resolve([] as ClaimedDelivery[]),
    delivered: () => (told.push('delivered'), Promise.resolve(true)),
    retry: (_d: ClaimedDelivery, ms: number, error: string) => (
      told.push(`retry ${ms} ${error}`),
      Promise.resolve(true)
    ),
    failed: (_d: ClaimedDelivery, error: string) => (told.push(`failed ${error}`), Promise.resolve(true)),
  };
  const mail: Mailer = { send: (): Promise<Answer> => Promise.resolve({ statusCode: 550 }) };
  const d = new StatusDeliverer({
    store,
    mail,
    http: () =>
      answer instanceof Error
        ? Promise.reject(answer)
        : Promise.resolve({
            statusCode: answer.statusCode,
            headers: answer.headers ?? {},
            body: Buffer.alloc(0),
          } as never),
    box,
    links: new SubscriptionLinks(ring, 'https://status.example.test'),
    publicUrl: 'https://status.example.test',
    logger: createLogger({ service: 'test', level: 'silent' }),
    registry: new Registry(),
    userAgent: 'test',
    timeoutMs: 1000,
    intervalMs: 1000,
    maxAttempts,
    retryBaseMs: 1000,
    leaseSeconds: 60,
    now: () => Date.parse('2026-11-26T12:00:00Z'),
  });
  return { d, told, store };
}

/** Sends one claimed delivery through `d` (as a round would). */
async function deliverOne(h: ReturnType<typeof harness>, c: ClaimedDelivery): Promise<string[]> {
  h.store.claimDue = () => Promise.resolve([c]);
  await h.d.round();
  return h.told;
}

describe('status-page notice delivery (unit)', () => {
  it('backs off doubling from the base, at most an hour', () => {
    expect([1, 2, 3, 4].map((a) => deliveryBackoffMs(a, 30_000))).to.deep.equal([30_000, 60_000, 120_000, 240_000]);
    expect(deliveryBackoffMs(20, 30_000)).to.equal(3_600_000);
    expect(deliveryBackoffMs(1000, 30_000)).to.equal(3_600_000);
  });

  it('delivers on 2xx, gives up on 4xx (not 408/429), retries 5xx and 429 (its Retry-After when longer)', async () => {
    expect(await deliverOne(harness({ statusCode: 204 }), claimed())).to.deep.equal(['delivered']);
    expect(await deliverOne(harness({ statusCode: 404 }), claimed())).to.deep.equal(['failed status 404']);
    expect(await deliverOne(harness({ statusCode: 410 }), claimed())).to.deep.equal(['failed status 410']);
    expect(await deliverOne(harness({ statusCode: 500 }), claimed({ attempts: 1 }))).to.deep.equal([
      'retry 2000 status 500',
    ]);
    expect(await deliverOne(harness({ statusCode: 408 }), claimed())).to.deep.equal(['retry 1000 status 408']);
    expect(await deliverOne(harness({ statusCode: 429, headers: { 'retry-after': '120' } }), claimed())).to.deep.equal([
      'retry 120000 status 429',
    ]);
    // The last attempt failing gives the delivery up.
    expect(await deliverOne(harness({ statusCode: 503 }, 3), claimed({ attempts: 2 }))).to.deep.equal([
      'failed status 503',
    ]);
  });

  it('never writes a secret into last_error; a sealed URL it cannot open is given up', async () => {
    const told = await deliverOne(
      harness(new Error('connect ECONNREFUSED https://hooks.example.test/x?token=s3cr3t')),
      claimed(),
    );
    expect(told).to.deep.equal(['retry 1000 network']);
    const other = sealSubscriberWebhook(new SecretBox([{ id: 'k9', key: randomBytes(32) }]), sub, {
      url: 'https://hooks.example.test/x',
      secret: 'whsec_x',
    });
    expect(await deliverOne(harness({ statusCode: 200 }), claimed({ webhookSealed: other }))).to.deep.equal([
      'failed its sealed URL could not be opened',
    ]);
  });

  it('mails with the page link, the unsubscribe link and the one-click headers; SMTP 5xx given up', async () => {
    const h = harness({ statusCode: 200 });
    const c = claimed({ kind: 'email', email: 'reader@example.test', webhookSealed: null });
    const m = h.d.message(c);
    expect(m).to.deep.include({
      to: 'reader@example.test',
      subject: 'Down',
      messageId: `<${c.noticeId}.${sub}@telemetry>`,
    });
    expect(m.text).to.contain('It is down.').and.contain('https://status.example.test/status/shop');
    expect(m.text).to.contain('https://status.example.test/status/shop/subscription#unsubscribe=');
    expect(Object.keys(m.headers ?? {})).to.deep.equal(['List-Unsubscribe', 'List-Unsubscribe-Post']);
    expect(await deliverOne(h, c)).to.deep.equal(['failed status 550']);
  });

  it("sends the notice's envelope and its payload's report, update or maintenance, nothing else of it", () => {
    const h = harness({ statusCode: 200 });
    const update = { id: 'upd_1', state: 'identified', message: 'Found it', at: '2026-11-26T12:00:00.000Z' };
    const c = claimed();
    const body = JSON.parse(
      h.d.body({ ...c, notice: { ...c.notice, payload: { update, id: 'forged', extra: 1 } } }),
    ) as Record<string, unknown>;
    expect(body).to.deep.equal({
      id: c.noticeId,
      type: 'report_opened',
      created_at: '2026-11-26T12:00:00.000Z',
      page: { slug: 'shop', title: 'Shop status', url: 'https://status.example.test/status/shop' },
      title: 'Down',
      body: 'It is down.',
      update,
    });
  });

  it('words a maintenance notice in UTC with its message, keyed by page, monitor, start and kind', () => {
    const start = Date.parse('2026-11-27T02:00:00Z');
    const n = maintenanceNotice(
      { slug: 'shop', tenant_id: 't1' },
      { id: 'mon_1', name: 'Checkout' },
      {
        start,
        end: start + 3_600_000,
        window: { from: '2026-11-27T02:00:00Z', to: '2026-11-27T03:00:00Z', message: 'DB <b>' },
      },
      'maintenance_scheduled',
    );
    expect(n.title).to.equal('Scheduled maintenance: Checkout');
    expect(n.body).to.equal(
      'Checkout is scheduled for maintenance from 2026-11-27 02:00 UTC to 2026-11-27 03:00 UTC.\n\nDB <b>',
    );
    expect(n.dedupKey).to.equal(`maintenance:shop:mon_1:${start}:maintenance_scheduled`);
    expect(n.monitorIds).to.deep.equal(['mon_1']);
    expect(n.payload).to.deep.equal({
      maintenance: {
        monitor: { id: 'mon_1', name: 'Checkout' },
        starts_at: '2026-11-27T02:00:00.000Z',
        ends_at: '2026-11-27T03:00:00.000Z',
        in_progress: false,
        message: 'DB <b>',
      },
    });
  });
});
