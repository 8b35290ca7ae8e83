import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import type { Incident, Monitor, WebhookDelivery } from '@telemetry/contract';
import { createAjv } from '../../libs/contract/src/ajv.js';
import { freePort } from '../../tools/devstack/ports.js';
import { eventually, newKey, runConsumer, runQuery, runRunner, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { runMailpit, type MailpitClient } from '../support/mailpit.js';
import { TestTarget, type SeenRequest } from '../support/target.js';

const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../fixtures/providers/${name}.json`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;
/** The providers' published schemas (test/fixtures/providers, sources named there). */
const providers = createAjv([]);
// PagerDuty's OpenAPI document says `format: url`: an absolute URL.
providers.addFormat('url', (s: string) => URL.canParse(s));
const pagerdutyBody = providers.compile(fixture('pagerduty-events-v2').schema as object);
// NOTE: Slack's schema as transcribed leaves types to its `allOf`: a non-strict ajv reads it as is.
const Lenient = providers.constructor as new (opts: object) => typeof providers;
const slackBody = new Lenient({ strict: false, allErrors: true }).compile(fixture('slack'));

/**
 * Issue 40's end-to-end test (docs/alerting.md): real Kafka, ClickHouse, PostgreSQL and
 * Mailpit; loopback recording servers stand in for Slack and PagerDuty. The services run
 * once, with ALERT_MIN_DELAY_SECONDS=1 and short ticks.
 */
describe('alerting end to end: email, Slack, PagerDuty, escalation, acknowledgement, grouping (real services)', function () {
  this.timeout(240_000);
  let query: Running;
  let consumer: Running;
  let runner: Running;
  let key: string;
  let publicUrl: string;
  /** One loopback server per provider: each is its own origin, so its own delivery queue. */
  const slack = new TestTarget();
  const pagerduty = new TestTarget();
  const throttled = new TestTarget();
  const hanging = new TestTarget();
  const fast = new TestTarget();
  const services = new TestTarget();
  let mail: MailpitClient;
  /** Something listening on the monitors' port once they recover. */
  let recovered: Server | undefined;

  const api = apiClient(
    () => query.url,
    () => key,
  );
  const ROUTING_KEY = 'R0UT1NGKEY0123456789abcdefABCDEF';
  const SLACK_PATH = '/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX';

  async function create<T>(path: string, body: object): Promise<T> {
    const r = await api<T>('POST', path, body);
    expect(r.status, `${path}: ${JSON.stringify(r.body)}`).to.equal(201);
    return r.body.data;
  }
  const channel = (body: object): Promise<{ id: string }> => create('/api/channels', body);
  const monitor = (body: object): Promise<Monitor> =>
    create('/api/monitors', { interval_seconds: 1, timeout_ms: 500, failure_threshold: 1, ...body });
  /** Checks `holds` every 100 ms for `ms`: something that must NOT happen, watched for a while. */
  async function stays(what: string, holds: () => boolean, ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      expect(holds(), what).to.equal(true);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const json = (r: SeenRequest): Record<string, unknown> => JSON.parse(r.body) as Record<string, unknown>;
  const events = (path: string, action: string): SeenRequest[] =>
    pagerduty.requests(path).filter((r) => json(r).event_action === action);

  before(async () => {
    mail = runMailpit();
    await Promise.all([slack, pagerduty, throttled, hanging, fast, services].map((t) => t.start()));
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    const alerting = { PUBLIC_URL: publicUrl, ALERT_MIN_DELAY_SECONDS: '1' };
    [query, consumer, runner] = await Promise.all([
      runQuery({ ...alerting, PORT: String(port) }),
      runConsumer(),
      runRunner({
        ...alerting,
        ESCALATION_TICK_MS: '200',
        ALERT_GROUP_WAIT_MS: '2500',
        ALERT_GROUP_THRESHOLD: '3',
        WEBHOOK_RETRY_BASE_MS: '200',
        // The hanging provider hangs for the whole test.
        WEBHOOK_TIMEOUT_MS: '20000',
      }),
    ]);
    key = await newKey({ kind: 'api', name: 'alerting', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/channels')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    recovered?.closeAllConnections();
    await new Promise<void>((r) => (recovered ? recovered.close(() => r()) : r()));
    // The providers first: the hanging one's connection ends, so the runner stops at once.
    await Promise.all([slack, pagerduty, throttled, hanging, fast, services].map((t) => t.stop()));
    await Promise.all([runner?.stop(), query?.stop(), consumer?.stop()]);
  });

  it('emails, posts to Slack and triggers PagerDuty; escalates; the ack link stops it; recovery resolves', async () => {
    const email = await channel({
      type: 'email',
      name: 'Ops mail',
      config: { to: ['ops@example.test'] },
    });
    const chat = await channel({
      type: 'slack',
      name: 'ops-alerts',
      config: { url: slack.url(SLACK_PATH) },
      remind_every_seconds: 1,
      remind_max: 20,
    });
    const paging = await channel({
      type: 'pagerduty',
      name: 'On call',
      config: { routing_key: ROUTING_KEY, api_url: pagerduty.url('/v2/enqueue') },
      send_resolved: false,
    });
    const second = await channel({
      type: 'slack',
      name: 'managers',
      config: { url: slack.url('/services/T000/B000/SECONDSTEP') },
      send_resolved: false,
    });
    const policy = await create<{ id: string }>('/api/escalation-policies', {
      name: 'Ops then managers',
      steps: [{ channels: [email.id, chat.id, paging.id], escalate_after_seconds: 2 }, { channels: [second.id] }],
    });
    const port = await freePort();
    const m = await monitor({
      name: 'Checkout API',
      url: `http://127.0.0.1:${port}/health`,
      escalation_policy: policy.id,
    });

    // Down: the email, Slack's Block Kit body and PagerDuty's trigger.
    const [mailed] = await mail.waitFor('subject:"Checkout API"', 1, 30_000);
    expect(mailed!.Subject).to.contain('Checkout API');
    expect(mailed!.Text).to.contain('Checkout API');
    expect(mailed!.Text).to.match(/refused/i);
    const ackLink = new RegExp(`${publicUrl}/ack/[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+`).exec(mailed!.Text)?.[0];
    expect(ackLink, mailed!.Text).to.be.a('string');
    expect(mailed!.HTML).to.contain(ackLink);
    const [incident] = await eventually('the open incident', async () => {
      const r = await api<Incident[]>('GET', `/api/monitors/${m.id}/incidents`);
      return r.body.data?.length ? r.body.data : undefined;
    });
    const trigger = await eventually('a PagerDuty trigger', () => events('/v2/enqueue', 'trigger')[0]);
    expect(json(trigger)).to.include({ routing_key: ROUTING_KEY, event_action: 'trigger', dedup_key: incident!.id });
    expect(pagerdutyBody(json(trigger)), JSON.stringify(pagerdutyBody.errors)).to.equal(true);
    expect((json(trigger).payload as Record<string, unknown>).summary).to.contain('Checkout API');
    expect(trigger.headers['content-type']).to.contain('application/json');
    const first = await eventually('the Slack message', () => slack.requests(SLACK_PATH)[0]);
    expect(slackBody(json(first)), JSON.stringify(slackBody.errors)).to.equal(true);
    const body = json(first) as { text: string; blocks: { type: string }[] };
    expect(body.text).to.contain('Checkout API');
    expect(body.blocks.map((b) => b.type)).to.include.members(['header', 'section', 'actions']);

    // Nobody acknowledges: after the step's 2 s the second step hears of it.
    const escalated = await eventually('the second step', () => slack.requests('/services/T000/B000/SECONDSTEP')[0]);
    expect(escalated.at - first.at).to.be.at.least(1500);
    expect(json(escalated).text).to.contain('Checkout API');

    // Opening the link only shows a page; its button acknowledges.
    const page = await fetch(ackLink!);
    expect(page.status).to.equal(200);
    expect(await page.text()).to.contain('<form method="post"');
    const still = await api<Incident[]>('GET', `/api/monitors/${m.id}/incidents`);
    expect(still.body.data[0]!.acknowledged_at).to.equal(null);
    const pressed = await fetch(ackLink!, { method: 'POST' });
    expect(pressed.status).to.equal(200);
    const acked = await eventually('the incident acknowledged', async () => {
      const r = await api<Incident[]>('GET', `/api/monitors/${m.id}/incidents`);
      return r.body.data[0]?.acknowledged_at ? r.body.data[0] : undefined;
    });
    expect(acked.acknowledged_by).to.equal('email:ops@example.test');
    // PagerDuty's own acknowledge is sent on; once it arrived the clock has seen the acknowledgement.
    const ack = await eventually('a PagerDuty acknowledge', () => events('/v2/enqueue', 'acknowledge')[0]);
    expect(json(ack)).to.include({ dedup_key: incident!.id });
    expect(pagerdutyBody(json(ack)), JSON.stringify(pagerdutyBody.errors)).to.equal(true);
    // Reminders (every second) and escalation stop: nothing more arrives for several periods.
    // A reminder claimed just before may still sit out its group's wait (2.5 s): the count
    // settles first, then stays put for several reminder periods and ticks.
    const sent = (): number => slack.seen.length;
    const settledAt = await eventually('no reminder in flight', async () => {
      const n = sent();
      await new Promise((r) => setTimeout(r, 3000));
      return sent() === n ? n : undefined;
    });
    await stays('no Slack message after the acknowledgement', () => sent() === settledAt, 3500);

    // It recovers: PagerDuty resolves with the same dedup_key (its send_resolved is false:
    // paging channels always resolve); Slack's ops channel and the mail want `up`, the second step not.
    const upBefore = slack.requests('/services/T000/B000/SECONDSTEP').length;
    const opsBefore = slack.requests(SLACK_PATH).length;
    recovered = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => recovered!.listen(port, '127.0.0.1', r));
    const resolve = await eventually('a PagerDuty resolve', () => events('/v2/enqueue', 'resolve')[0], 30_000);
    expect(json(resolve)).to.include({ routing_key: ROUTING_KEY, dedup_key: incident!.id });
    expect(pagerdutyBody(json(resolve)), JSON.stringify(pagerdutyBody.errors)).to.equal(true);
    const up = await eventually('Slack’s up', () => slack.requests(SLACK_PATH)[opsBefore]);
    expect(json(up).text).to.contain('UP: Checkout API');
    await mail.waitFor('subject:"Checkout API"', 2, 30_000);
    expect(slack.requests('/services/T000/B000/SECONDSTEP')).to.have.length(upBefore);
  });

  it('waits for a 429’s Retry-After, delivers each notification once, and a hanging provider delays no other', async () => {
    const limited = await channel({ type: 'slack', name: 'limited', config: { url: throttled.url('/hook') } });
    throttled.set('/hook', 'throttle');
    const dead = await channel({ type: 'slack', name: 'dead', config: { url: hanging.url('/hook') } });
    hanging.set('/hook', 'hang');
    const live = await channel({ type: 'slack', name: 'live', config: { url: fast.url('/hook') } });
    await monitor({
      name: 'Rate limited',
      url: `http://127.0.0.1:${await freePort()}/`,
      channels: [limited.id, dead.id, live.id],
    });
    const [refused, retried] = await eventually('the retry after Retry-After', () => {
      const r = throttled.requests('/hook');
      return r.length >= 2 ? r : undefined;
    });
    expect(retried!.at - refused!.at).to.be.at.least(2000);
    // The live channel's message went out while the dead one's still hangs.
    const hung = await eventually('the dead provider reached', () => hanging.requests('/hook')[0]);
    const delivered = await eventually('the live provider reached', () => fast.requests('/hook')[0]);
    expect(delivered.at - hung.at).to.be.below(1000);
    // Each notification reached the rate-limited provider once with a 2xx: the pair above only.
    await stays('no third request', () => throttled.requests('/hook').length === 2, 2000);
    // The channel's delivery log: the refused attempt, then the delivered one, with the channel's id and kind.
    const log = await eventually('the channel’s delivery log', async () => {
      const r = await api<WebhookDelivery[]>('GET', `/api/channels/${limited.id}/deliveries`);
      return r.body.data?.length === 2 ? r.body.data : undefined;
    });
    expect(log.map((d) => `${d.attempt}:${d.status}:${d.status_code}:${d.kind}:${d.channel_id}`).sort()).to.deep.equal([
      `1:retrying:429:down:${limited.id}`,
      `2:delivered:200:down:${limited.id}`,
    ]);
  });

  it('sends twenty monitors failing together to a channel as one grouped message', async () => {
    const grouped = await channel({ type: 'slack', name: 'grouped', config: { url: slack.url('/services/GROUPED') } });
    services.set('/svc', 'ok');
    const monitors: Monitor[] = [];
    for (let i = 0; i < 20; i++) {
      monitors.push(await monitor({ name: `Shop ${i}`, url: services.url('/svc'), channels: [grouped.id] }));
    }
    await eventually('every monitor up', async () => {
      const all = await Promise.all(monitors.map((x) => api<Monitor>('GET', `/api/monitors/${x.id}`)));
      return all.every((r) => r.body.data.status === 'up') ? true : undefined;
    });
    services.set('/svc', 'error');
    const message = await eventually('the grouped message', () => slack.requests('/services/GROUPED')[0], 30_000);
    expect(slackBody(json(message)), JSON.stringify(slackBody.errors)).to.equal(true);
    const text = JSON.stringify(json(message));
    for (let i = 0; i < 20; i++) expect(text).to.contain(`Shop ${i}`);
    // One message, not twenty.
    await stays('one message', () => slack.requests('/services/GROUPED').length === 1, 3000);
  });
});
