import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { expect } from 'chai';
import type { OpsgenieChannelConfig, PagerdutyChannelConfig, StateAlert } from '@telemetry/contract';
import { EgressPolicy, httpCall } from '@telemetry/platform';
import { CHANNELS, type ChannelContext, type Notification, type NotifiedAlert } from '@telemetry/alerting';
import { opsgenieChannel } from '../../libs/alerting/src/channels/opsgenie.js';
import { PAGERDUTY_EVENTS_URL, pagerdutyChannel } from '../../libs/alerting/src/channels/pagerduty.js';
import { createAjv } from '../../libs/contract/src/ajv.js';
import { noMail, sampleAlert } from './support/fakes.js';

/**
 * Contract tests of the paging channels: each request, captured by a loopback recording
 * server through the real egress-bound HTTP client, is checked against the provider's
 * published schema or documented example (test/fixtures/providers/, sources named there),
 * not only against our own expectations. No test reaches a real provider.
 */

const fixture = <T>(name: string): T =>
  JSON.parse(readFileSync(new URL(`../fixtures/providers/${name}.json`, import.meta.url), 'utf8')) as T;

interface PagerdutyFixture {
  schema: Record<string, unknown>;
  example: unknown;
  documented_limits: { 'payload.summary': number; dedup_key: number };
  responses: Record<string, { example?: unknown }>;
}
interface OpsgenieFixture {
  authorization: string;
  requests: Record<
    'create' | 'acknowledge' | 'close',
    { method: string; path: string; schema: object; example: unknown }
  >;
  details_max_total_chars?: number;
  response: { status: number; example: unknown };
}
const pd = fixture<PagerdutyFixture>('pagerduty-events-v2');
const og = fixture<OpsgenieFixture>('opsgenie-alerts');
const ogCreate = fixture<{ requests: { create: { details_max_total_chars: number } } }>('opsgenie-alerts').requests
  .create.details_max_total_chars;

// The contract's validator (ajv, date-time and the other formats); the providers' schemas as they are.
const ajv = createAjv([]);
// PagerDuty's OpenAPI document says `format: url`: an absolute URL.
ajv.addFormat('url', (s: string) => URL.canParse(s));
const validPd = ajv.compile(pd.schema);
const validOg = {
  create: ajv.compile(og.requests.create.schema),
  acknowledge: ajv.compile(og.requests.acknowledge.schema),
  close: ajv.compile(og.requests.close.schema),
};

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback server that records each request and answers with the next scripted answer (202 when none is left). */
class Recorder {
  readonly seen: Seen[] = [];
  readonly answers: { status: number; headers?: Record<string, string>; body: string }[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => {
        this.seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(parts).toString('utf8'),
        });
        const a = this.answers.shift() ?? { status: 202, body: '{"status":"success"}' };
        res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
        res.end(a.body);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

const now = Date.parse('2026-11-22T10:05:00.000Z');
const allowLoopback = new EgressPolicy({ allow: ['127.0.0.1/32'] });

function context(policy: EgressPolicy): ChannelContext {
  return {
    http: (call) => httpCall({ ...call, policy }),
    mail: noMail,
    userAgent: 'telemetry-test/1',
    timeoutMs: 5000,
    signal: new AbortController().signal,
    now: () => now,
  };
}

const up: StateAlert = {
  ...sampleAlert,
  id: 'alr_000000000000000000000002',
  type: 'monitor.up',
  created_at: '2026-11-22T10:05:00.000Z',
  check: { id: 'chk_9', status: 'up', response_time: 12, status_code: 200, created_at: '2026-11-22T10:05:00Z' },
};

/** A notification of `kind` about sampleAlert's incident, as the dispatcher builds it. */
function notification(kind: Notification['kind'], extra: Partial<NotifiedAlert> = {}): Notification {
  const alert = kind === 'up' ? up : sampleAlert;
  const item: NotifiedAlert = {
    kind,
    alert,
    monitorLink: 'https://telemetry.example.com/monitors/mon_a',
    ...(kind === 'up'
      ? {}
      : { ackLink: (r: string) => `https://telemetry.example.com/ack/tok-${encodeURIComponent(r)}` }),
    ...extra,
  };
  return { id: `n-${kind}-1`, kind, items: [item], attempt: 1 };
}

const KINDS = ['down', 'reminder', 'escalation', 'acknowledged', 'up', 'test'] as const;

describe('paging channel contracts (unit, a loopback recording server)', () => {
  let rec: Recorder;
  beforeEach(async () => {
    rec = await new Recorder().start();
  });
  afterEach(() => rec.stop());

  describe('PagerDuty Events API v2', () => {
    const config = (): PagerdutyChannelConfig => ({
      routing_key: 'e93facc04764012d7bfb002500d5d1a6',
      api_url: `${rec.url}/v2/enqueue`,
    });

    it("the fixture's own documented example passes its schema (the fixture is sound)", () => {
      expect(validPd(pd.example), JSON.stringify(validPd.errors)).to.equal(true);
      expect(validPd({ routing_key: 'x', event_action: 'snooze' })).to.equal(false);
    });

    it('sends each notification as an event the schema accepts, dedup_key = the incident id', async () => {
      const expected = {
        down: 'trigger',
        reminder: 'trigger',
        escalation: 'trigger',
        acknowledged: 'acknowledge',
        up: 'resolve',
        test: 'trigger',
      } as const;
      for (const kind of KINDS) {
        const n = notification(kind, kind === 'acknowledged' ? { acknowledged_by: 'email:ops@example.com' } : {});
        const r = pagerdutyChannel.render(n, config(), { templates: {}, name: 'On call', now });
        const a = await pagerdutyChannel.send(r, config(), context(allowLoopback));
        expect(a.statusCode, kind).to.equal(202);
        expect(pagerdutyChannel.classify(a)).to.equal('delivered');
      }
      expect(rec.seen).to.have.length(KINDS.length);
      for (const [i, s] of rec.seen.entries()) {
        const kind = KINDS[i]!;
        expect(s.method).to.equal('POST');
        expect(s.url).to.equal('/v2/enqueue');
        expect(s.headers['content-type']).to.equal('application/json');
        const body = JSON.parse(s.body) as Record<string, unknown> & { payload?: Record<string, unknown> };
        expect(validPd(body), `${kind}: ${JSON.stringify(validPd.errors)}`).to.equal(true);
        expect(body.event_action, kind).to.equal(expected[kind]);
        expect(body.routing_key).to.equal('e93facc04764012d7bfb002500d5d1a6');
        expect(body.dedup_key, kind).to.equal(kind === 'test' ? 'test-n-test-1' : sampleAlert.incident_id);
        expect((body.dedup_key as string).length).to.be.at.most(pd.documented_limits.dedup_key);
        if (expected[kind] !== 'trigger') {
          expect(body.payload, kind).to.equal(undefined);
          continue;
        }
        const p = body.payload!;
        expect((p.summary as string).length).to.be.at.most(pd.documented_limits['payload.summary']);
        expect(p.source).to.equal('a.test');
        expect(p.severity).to.equal(kind === 'test' ? 'info' : 'critical');
        expect(p.component).to.equal('a');
        expect(p.custom_details).to.deep.include({ cause: 'connection refused', incident_id: sampleAlert.incident_id });
        expect(body.client).to.equal('Telemetry');
        expect(body.client_url).to.equal('https://telemetry.example.com/monitors/mon_a');
        expect(body.links).to.deep.include({
          href: 'https://telemetry.example.com/ack/tok-pagerduty%3AOn%20call',
          text: 'Acknowledge in Telemetry',
        });
      }
      const down = JSON.parse(rec.seen[0]!.body) as { payload: { summary: string; timestamp: string } };
      expect(down.payload.summary).to.equal('DOWN: a: connection refused');
      expect(down.payload.timestamp).to.equal(sampleAlert.created_at);
    });

    it('keeps the summary within 1024 characters and uses the configured severity', async () => {
      const long = { ...sampleAlert, monitor: { name: 'x'.repeat(3000), url: 'http://a.test/' } };
      const n: Notification = {
        id: 'n1',
        kind: 'down',
        items: [{ kind: 'down', alert: long, monitorLink: '' }],
        attempt: 1,
      };
      const c = { ...config(), severity: 'warning' as const };
      await pagerdutyChannel.send(
        pagerdutyChannel.render(n, c, { templates: {}, name: 'x', now }),
        c,
        context(allowLoopback),
      );
      const body = JSON.parse(rec.seen[0]!.body) as { payload: { summary: string; severity: string } };
      expect(body.payload.summary).to.have.length(1024);
      expect(body.payload.severity).to.equal('warning');
      expect(validPd(body)).to.equal(true);
    });

    it('gives up a 400 at once with the answer kept, and retries a 429 after its Retry-After', async () => {
      rec.answers.push(
        { status: 400, body: JSON.stringify(pd.responses['400']!.example) },
        { status: 429, headers: { 'retry-after': '2' }, body: '' },
      );
      const r = pagerdutyChannel.render(notification('down'), config(), { templates: {}, name: 'x', now });
      const bad = await pagerdutyChannel.send(r, config(), context(allowLoopback));
      expect(bad.statusCode).to.equal(400);
      expect(bad.response).to.include('Event object is invalid');
      expect(pagerdutyChannel.classify(bad)).to.equal('give_up');
      const busy = await pagerdutyChannel.send(r, config(), context(allowLoopback));
      expect(busy).to.deep.include({ statusCode: 429, retryAfterMs: 2000 });
      expect(pagerdutyChannel.classify(busy)).to.equal('retry');
    });

    it('passes the egress policy: a denied api_url is refused before anything is sent', async () => {
      const r = pagerdutyChannel.render(notification('down'), config(), { templates: {}, name: 'x', now });
      const a = await pagerdutyChannel.send(r, config(), context(new EgressPolicy()));
      expect(a).to.deep.include({ statusCode: 0, error: 'target_not_allowed' });
      expect(pagerdutyChannel.classify(a)).to.equal('give_up');
      expect(rec.seen).to.have.length(0);
    });

    it('pages (always resolved and acknowledged), never groups, queues per key and shows no key', () => {
      expect(CHANNELS.pagerduty).to.equal(pagerdutyChannel);
      expect([pagerdutyChannel.paging, pagerdutyChannel.groups]).to.deep.equal([true, false]);
      const c = { routing_key: 'e93facc04764012d7bfb002500d5d1a6' };
      // One queue per routing key (a digest: the key itself never shows), so one tenant's rate limit holds no other's.
      expect(pagerdutyChannel.endpoint(c)).to.match(/^https:\/\/events\.pagerduty\.com [0-9a-f]{16}$/);
      expect(pagerdutyChannel.endpoint(c)).not.to.include(c.routing_key);
      expect(pagerdutyChannel.endpoint({ routing_key: 'f'.repeat(32) })).not.to.equal(pagerdutyChannel.endpoint(c));
      expect(PAGERDUTY_EVENTS_URL).to.equal('https://events.pagerduty.com/v2/enqueue');
      expect(pagerdutyChannel.shown(c)).to.equal('pagerduty: events.pagerduty.com');
    });
  });

  describe('Opsgenie Alert API', () => {
    const config = (): OpsgenieChannelConfig => ({
      api_key: 'eb243592-faa2-4ba2-a551q-1afdf565c889',
      api_url: rec.url,
    });

    it("the fixture's own documented examples pass its schemas (the fixture is sound)", () => {
      for (const k of ['create', 'acknowledge', 'close'] as const) {
        expect(validOg[k](og.requests[k].example), k).to.equal(true);
      }
    });

    it('creates, acknowledges and closes by alias = the incident id (URL-encoded), with GenieKey, bodies the documented fields', async () => {
      const incident = 'inc/1 ?x';
      const alert = { ...sampleAlert, incident_id: incident };
      const mk = (kind: Notification['kind'], extra: Partial<NotifiedAlert> = {}): Notification => {
        const n = notification(kind, extra);
        return { ...n, items: [{ ...n.items[0]!, alert: { ...n.items[0]!.alert, incident_id: incident } }] };
      };
      const sent: Notification[] = [
        mk('down'),
        mk('reminder', { reminder: 2 }),
        mk('escalation', { step: 2 }),
        mk('acknowledged', { acknowledged_by: 'email:ops@example.com' }),
        mk('up'),
        mk('test'),
      ];
      for (const n of sent) {
        const r = opsgenieChannel.render(n, config(), { templates: {}, name: 'Ops', now });
        const a = await opsgenieChannel.send(r, config(), context(allowLoopback));
        expect(a.statusCode, n.kind).to.equal(202);
        expect(opsgenieChannel.classify(a)).to.equal('delivered');
      }
      const which = ['create', 'create', 'create', 'acknowledge', 'close', 'create'] as const;
      const encoded = encodeURIComponent(alert.incident_id);
      rec.seen.forEach((s, i) => {
        const k = which[i]!;
        const spec = og.requests[k];
        expect(s.method).to.equal(spec.method);
        expect(s.url, k).to.match(new RegExp(spec.path));
        if (k !== 'create') expect(s.url).to.equal(`/v2/alerts/${encoded}/${k}?identifierType=alias`);
        expect(s.headers.authorization).to.match(new RegExp(og.authorization));
        expect(s.headers.authorization).to.equal('GenieKey eb243592-faa2-4ba2-a551q-1afdf565c889');
        expect(s.headers['content-type']).to.equal('application/json');
        const body = JSON.parse(s.body) as Record<string, unknown>;
        expect(validOg[k](body), `${sent[i]!.kind}: ${JSON.stringify(validOg[k].errors)}`).to.equal(true);
        if (k === 'create') {
          expect(body.alias).to.equal(sent[i]!.kind === 'test' ? 'test-n-test-1' : incident);
          expect(JSON.stringify(body.details).length).to.be.at.most(ogCreate);
          expect(body.priority).to.equal(sent[i]!.kind === 'test' ? 'P5' : 'P1');
        }
      });
      const down = JSON.parse(rec.seen[0]!.body) as { message: string; details: Record<string, string> };
      expect(down.message).to.equal('DOWN: a: connection refused');
      expect(down.details).to.include({
        console: 'https://telemetry.example.com/monitors/mon_a',
        acknowledge: 'https://telemetry.example.com/ack/tok-opsgenie%3AOps',
        cause: 'connection refused',
      });
      const ack = JSON.parse(rec.seen[3]!.body) as { user: string; source: string };
      expect(ack).to.include({ user: 'email:ops@example.com', source: 'Telemetry' });
    });

    it('keeps the message within 130 characters and uses the configured priority', async () => {
      const long = { ...sampleAlert, monitor: { name: 'y'.repeat(500), url: 'http://a.test/' } };
      const n: Notification = {
        id: 'n1',
        kind: 'down',
        items: [{ kind: 'down', alert: long, monitorLink: '' }],
        attempt: 1,
      };
      const c = { ...config(), priority: 'P3' as const };
      await opsgenieChannel.send(
        opsgenieChannel.render(n, c, { templates: {}, name: 'x', now }),
        c,
        context(allowLoopback),
      );
      const body = JSON.parse(rec.seen[0]!.body) as { message: string; priority: string };
      expect(body.message).to.have.length(130);
      expect(body.priority).to.equal('P3');
      expect(validOg.create(body)).to.equal(true);
    });

    it('pages, never groups, queues per key and shows no key', () => {
      expect(CHANNELS.opsgenie).to.equal(opsgenieChannel);
      expect([opsgenieChannel.paging, opsgenieChannel.groups]).to.deep.equal([true, false]);
      const c = { api_key: 'eb243592-faa2-4ba2-a551q-1afdf565c889' };
      expect(opsgenieChannel.endpoint(c)).to.match(/^https:\/\/api\.opsgenie\.com [0-9a-f]{16}$/);
      expect(opsgenieChannel.endpoint(c)).not.to.include(c.api_key);
      expect(opsgenieChannel.shown(c)).to.equal('opsgenie: api.opsgenie.com');
      expect(opsgenieChannel.shown({ ...c, api_url: 'https://api.eu.opsgenie.com' })).to.equal(
        'opsgenie: api.eu.opsgenie.com',
      );
    });
  });
});
