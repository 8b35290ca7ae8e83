import { expect } from 'chai';
import type {
  AlertMessage,
  ChannelObject,
  ChannelTestResult,
  EscalationPolicy,
  Incident,
  Monitor,
  StateAlert,
  WebhookDelivery,
} from '@telemetry/contract';
import { AckLinks } from '@telemetry/alerting';
import { parseSealingKeys } from '@telemetry/platform';
import { createTenant, IncidentAlertStore, issueKey } from '@telemetry/store';
import { RUN_SECRETS_KEYS } from '../../harness/processes.js';
import {
  adminClickHouse,
  adminRegistry,
  collectTopic,
  eventually,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient, apiRequest, type ApiAnswer } from '../support/api.js';
import { TestTarget } from '../support/target.js';

/**
 * The query service's alerting API (docs/alerting.md, "API") on the real stack: channels
 * (masking, validation in its order, IN_USE, If-Match, the test send to a loopback
 * receiver, the delivery log), escalation policies, monitors naming them, and
 * acknowledgement by key and by signed link (published to Kafka).
 */
describe('alerting API: channels, escalation policies, acknowledgement (real Kafka, ClickHouse, PostgreSQL)', function () {
  this.timeout(90_000);
  let query: Running;
  const target = new TestTarget();
  const keys = { a: '', b: '', read: '', limitedB: '' };
  const tenants = { a: '', b: '' };
  let keyIdA = '';
  const client = apiClient(
    () => query.url,
    () => keys.a,
  );
  const api = <T>(
    method: string,
    path: string,
    body?: unknown,
    o: { key?: string; headers?: Record<string, string> } = {},
  ) => client<T>(method, path, body, o);
  const paths = (r: ApiAnswer<unknown>): string[] => (r.body.details?.problems ?? []).map((p) => p.path);
  const links = new AckLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://127.0.0.1', 3600);

  const webhook = (name: string, extra: Record<string, unknown> = {}) => ({
    type: 'webhook',
    name,
    config: { url: target.url('/hook?token=abc'), secret: 'a-webhook-secret-of-enough-length', ...extra },
  });

  before(async () => {
    await target.start();
    tenants.a = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    tenants.b = (await createTenant(adminRegistry(), uid('tenant'))).tenant_id;
    const scopes = ['monitors:read', 'monitors:write', 'checks:read'];
    const a = await issueKey(adminRegistry(), { tenantId: tenants.a, kind: 'api', name: 'a', scopes });
    keys.a = a.key;
    keyIdA = a.record.key_id;
    keys.b = (await issueKey(adminRegistry(), { tenantId: tenants.b, kind: 'api', name: 'b', scopes })).key;
    keys.read = (
      await issueKey(adminRegistry(), { tenantId: tenants.a, kind: 'api', name: 'r', scopes: ['monitors:read'] })
    ).key;
    keys.limitedB = (
      await issueKey(adminRegistry(), {
        tenantId: tenants.b,
        kind: 'api',
        name: 'limited',
        scopes: ['monitors:read'],
        monitorIds: ['mon_only'],
      })
    ).key;
    query = await runQuery({
      ALERT_MIN_DELAY_SECONDS: '30',
      CHANNEL_TEST_TIMEOUT_MS: '2000',
      // The query service's own PostgreSQL role: the routes need no more than it is granted.
      DATABASE_URL: testStack().users.postgres!.query,
    });
    await eventually('keys loaded', async () =>
      (await api('GET', '/api/channels')).status === 200 ? true : undefined,
    );
    await eventually('read key loaded', async () =>
      (await api('GET', '/api/channels', undefined, { key: keys.read })).status === 200 ? true : undefined,
    );
    await eventually('key b loaded', async () =>
      (await api('GET', '/api/channels', undefined, { key: keys.b })).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await query?.stop();
    await target.stop();
  });

  it('creates a channel, shows its secrets masked, keeps them when sent back as shown, and confines it to its tenant', async () => {
    const created = await api<ChannelObject>('POST', '/api/channels', webhook('Ops hook'));
    expect(created.status, created.text).to.equal(201);
    const c = created.body.data;
    expect(created.headers.get('location')).to.equal(`/api/channels/${c.id}`);
    expect(created.headers.get('etag')).to.equal('"1"');
    expect(c).to.deep.include({ type: 'webhook', name: 'Ops hook', send_resolved: true, remind_every_seconds: 0 });
    expect(created.text).to.not.contain('a-webhook-secret-of-enough-length');
    expect(created.text).to.not.contain('token=abc');
    expect((c.config as { url: string }).url).to.match(/^http:\/\/127\.0\.0\.1:\d+/);

    const list = await api<ChannelObject[]>('GET', '/api/channels', undefined, { key: keys.read });
    expect(list.body.data.map((x) => x.id)).to.include(c.id);
    expect((await api('GET', `/api/channels/${c.id}`, undefined, { key: keys.b })).code).to.equal('CHANNEL_NOT_FOUND');
    expect((await api('GET', '/api/channels/chn_00000000000000000000')).code).to.equal('CHANNEL_NOT_FOUND');
    expect((await api('GET', '/api/channels/nonsense')).code).to.equal('CHANNEL_NOT_FOUND');
    expect((await api('POST', '/api/channels', webhook('x'), { key: keys.read })).code).to.equal('INSUFFICIENT_SCOPE');

    // The config sent back as read: the secrets stay what they were (the test send signs with it).
    const renamed = await api<ChannelObject>('PATCH', `/api/channels/${c.id}`, { name: 'Renamed', config: c.config });
    expect(renamed.status, renamed.text).to.equal(200);
    expect(renamed.body.data).to.deep.include({ name: 'Renamed', version: 2 });
    const test = await api<ChannelTestResult>('POST', `/api/channels/${c.id}/test`);
    expect(test.status, test.text).to.equal(200);
    expect(test.body.data).to.deep.include({ delivered: true, status_code: 200, error: null });
    const seen = target.requests('/hook');
    expect(seen).to.have.length(1);
    expect(seen[0]!.url).to.equal('/hook?token=abc');
    const signatureOk = seen[0]!.headers['x-telemetry-signature'];
    expect(signatureOk).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
    const body = JSON.parse(seen[0]!.body) as StateAlert;
    expect(body).to.deep.include({ tenant_id: tenants.a });
    expect(body.monitor.name).to.equal('Test notification');

    // If-Match: a stale version changes nothing.
    const stale = await api('PATCH', `/api/channels/${c.id}`, { name: 'Stale' }, { headers: { 'if-match': '"1"' } });
    expect(stale.code).to.equal('PRECONDITION_FAILED');
    const fresh = await api('PATCH', `/api/channels/${c.id}`, { name: 'Fresh' }, { headers: { 'if-match': '"2"' } });
    expect(fresh.status).to.equal(200);
    expect((await api<ChannelObject>('GET', `/api/channels/${c.id}`)).body.data.name).to.equal('Fresh');

    // A new secret replaces the stored one.
    const moved = await api<ChannelObject>('PATCH', `/api/channels/${c.id}`, {
      config: { url: target.url('/other'), secret: 'another-secret-of-enough-length' },
    });
    expect(moved.status, moved.text).to.equal(200);
    await api('POST', `/api/channels/${c.id}/test`);
    expect(target.requests('/other')).to.have.length(1);
    expect((await api('DELETE', `/api/channels/${c.id}`, undefined, { headers: { 'if-match': '"1"' } })).code).to.equal(
      'PRECONDITION_FAILED',
    );
    expect((await api('DELETE', `/api/channels/${c.id}`)).status).to.equal(200);
    expect((await api('GET', `/api/channels/${c.id}`)).code).to.equal('CHANNEL_NOT_FOUND');
  });

  it('refuses bad channels with the code and the path of each problem, in order', async () => {
    const schema = await api('POST', '/api/channels', { type: 'carrier-pigeon', name: '', config: {} });
    expect(schema.code).to.equal('VALIDATION_FAILED');
    expect(paths(schema)).to.include.members(['/type', '/name']);

    const config = await api('POST', '/api/channels', { type: 'slack', name: 'Slack', config: { url: 42 } });
    expect(config.code).to.equal('VALIDATION_FAILED');
    expect(paths(config)).to.deep.equal(['/config/url']);
    const missing = await api('POST', '/api/channels', {
      type: 'webhook',
      name: 'W',
      config: { url: target.url('/h') },
    });
    expect(missing.code).to.equal('VALIDATION_FAILED');
    expect(paths(missing)[0]).to.match(/^\/config/);

    const unknownVar = await api('POST', '/api/channels', {
      ...webhook('T'),
      templates: { title: '{{monitor.password}} is down' },
    });
    expect(unknownVar.code).to.equal('INVALID_TEMPLATE');
    expect(unknownVar.body.details?.problems?.[0]).to.deep.include({ path: '/templates/title' });
    expect(unknownVar.text).to.contain('monitor.password');
    const syntax = await api('POST', '/api/channels', { ...webhook('T'), templates: { text: '{{#alerts}} open' } });
    expect(syntax.code).to.equal('INVALID_TEMPLATE');
    expect(paths(syntax)).to.deep.equal(['/templates/text']);
    const partial = await api('POST', '/api/channels', webhook('T', { body_template: '{"x": "{{> evil}}"}' }));
    expect(partial.code).to.equal('INVALID_TEMPLATE');
    expect(paths(partial)).to.deep.equal(['/config/body_template']);

    const denied = await api('POST', '/api/channels', {
      type: 'webhook',
      name: 'Metadata',
      config: { url: 'http://169.254.169.254/latest', secret: 'a-webhook-secret-of-enough-length' },
    });
    expect(denied.code).to.equal('TARGET_NOT_ALLOWED');
    expect(paths(denied)).to.deep.equal(['/config/url']);
    const smtp = await api('POST', '/api/channels', {
      type: 'email',
      name: 'Mail',
      config: { to: ['ops@example.com'], smtp: { url: 'smtp://user:pw@10.0.0.1:587', from: 'alerts@example.com' } },
    });
    expect(smtp.code).to.equal('TARGET_NOT_ALLOWED');
    expect(paths(smtp)).to.deep.equal(['/config/smtp/url']);

    const reminders = await api('POST', '/api/channels', { ...webhook('R'), remind_every_seconds: 5 });
    expect(reminders.code).to.equal('VALIDATION_FAILED');
    expect(paths(reminders)).to.deep.equal(['/remind_every_seconds']);
    expect((await api('POST', '/api/channels', { ...webhook('R'), remind_every_seconds: 0 })).status).to.equal(201);
  });

  it('answers a failed test send with what happened, once, without retrying', async () => {
    target.set('/broken', 'error');
    const c = (await api<ChannelObject>('POST', '/api/channels', webhook('Broken', { url: target.url('/broken') })))
      .body.data;
    const r = await api<ChannelTestResult>('POST', `/api/channels/${c.id}/test`);
    expect(r.status).to.equal(200);
    expect(r.body.data).to.deep.include({
      delivered: false,
      status_code: 500,
      error: null,
      response: 'internal error',
    });
    expect(target.requests('/broken')).to.have.length(1);
    target.set('/hang', 'hang');
    const h = (await api<ChannelObject>('POST', '/api/channels', webhook('Hang', { url: target.url('/hang') }))).body
      .data;
    const started = Date.now();
    const hung = await api<ChannelTestResult>('POST', `/api/channels/${h.id}/test`);
    expect(hung.body.data).to.deep.include({ delivered: false, status_code: 0, error: 'timeout' });
    expect(Date.now() - started).to.be.below(5000);
  });

  it('closes at once what a test opened at a paging service: PagerDuty gets the trigger, then its resolve', async () => {
    const pd = (
      await api<ChannelObject>('POST', '/api/channels', {
        type: 'pagerduty',
        name: 'On call',
        config: { routing_key: 'a'.repeat(32), api_url: target.url('/pd/enqueue') },
      })
    ).body.data;
    const r = await api<ChannelTestResult>('POST', `/api/channels/${pd.id}/test`);
    expect(r.body.data.delivered).to.equal(true);
    const events = target
      .requests('/pd/enqueue')
      .map((q) => JSON.parse(q.body) as { event_action: string; dedup_key: string });
    expect(events.map((e) => e.event_action)).to.deep.equal(['trigger', 'resolve']);
    expect(events[1]!.dedup_key).to.equal(events[0]!.dedup_key);
  });

  it('spends at most CHANNEL_TESTS_PER_MINUTE tests a tenant, then answers 429 with Retry-After; a limited key reads no delivery log', async () => {
    // Tenant b has sent no test yet: its whole budget (10 a minute) is there.
    const c = (await api<ChannelObject>('POST', '/api/channels', webhook('Budget'), { key: keys.b })).body.data;
    const answers: number[] = [];
    for (let i = 0; i < 11; i++)
      answers.push((await api('POST', `/api/channels/${c.id}/test`, undefined, { key: keys.b })).status);
    expect(answers).to.deep.equal([...Array<number>(10).fill(200), 429]);
    const refused = await api('POST', `/api/channels/${c.id}/test`, undefined, { key: keys.b });
    expect(refused.body.code).to.equal('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    const log = await api('GET', `/api/channels/${c.id}/deliveries`, undefined, { key: keys.limitedB });
    expect([log.status, log.body.code]).to.deep.equal([403, 'MONITOR_NOT_ALLOWED']);
  });

  it('lists a channel’s delivery log, newest first, of its tenant only', async () => {
    const c = (await api<ChannelObject>('POST', '/api/channels', webhook('Logged'))).body.data;
    const { database } = testStack();
    const now = Date.now();
    const row = (i: number, tenant: string, channelId: string) => ({
      tenant_id: tenant,
      monitor_id: 'mon_logged',
      attempted_at: Math.floor((now - i * 1000) / 1000),
      id: `del_${i}_${tenant}`,
      attempted_at_ms: now - i * 1000,
      alert_id: `alr_${i}`,
      alert_type: 'monitor.down',
      url: 'http://127.0.0.1',
      attempt: 1,
      status: 'delivered',
      status_code: 200,
      duration_ms: 5,
      error: '',
      inserted_at: Math.floor(now / 1000),
      channel: 'webhook',
      channel_id: channelId,
      kind: 'down',
    });
    await adminClickHouse().insert({
      table: `${database}.webhook_deliveries`,
      format: 'JSONEachRow',
      values: [
        row(1, tenants.a, c.id),
        row(2, tenants.a, c.id),
        row(3, tenants.a, 'chn_ffffffffffffffffffff'),
        row(4, tenants.b, c.id),
      ],
    });
    const r = await api<WebhookDelivery[]>('GET', `/api/channels/${c.id}/deliveries?limit=1`);
    expect(r.status, r.text).to.equal(200);
    expect(r.body.data.map((d) => d.id)).to.deep.equal([`del_1_${tenants.a}`]);
    expect(r.body.data[0]).to.deep.include({ channel_id: c.id, kind: 'down' });
    const next = await api<WebhookDelivery[]>(
      'GET',
      `/api/channels/${c.id}/deliveries?limit=1&cursor=${encodeURIComponent(r.body.next_cursor!)}`,
    );
    expect(next.body.data.map((d) => d.id)).to.deep.equal([`del_2_${tenants.a}`]);
    expect(next.body.next_cursor).to.equal(null);
    expect((await api('GET', `/api/channels/${c.id}/deliveries?limit=0`)).code).to.equal('INVALID_PARAMETER');
    expect((await api('GET', `/api/channels/${c.id}/deliveries`, undefined, { key: keys.b })).code).to.equal(
      'CHANNEL_NOT_FOUND',
    );
  });

  it('keeps escalation policies to the tenant’s channels and the minimum delay; refuses deleting what is in use', async () => {
    const c = (await api<ChannelObject>('POST', '/api/channels', webhook('Step one'))).body.data;
    const other = (await api<ChannelObject>('POST', '/api/channels', webhook('Theirs'), { key: keys.b })).body.data;
    const short = await api('POST', '/api/escalation-policies', {
      name: 'Fast',
      steps: [{ channels: [c.id], escalate_after_seconds: 5 }, { channels: [c.id] }],
    });
    expect(short.code).to.equal('VALIDATION_FAILED');
    expect(paths(short)).to.deep.equal(['/steps/0/escalate_after_seconds']);
    const foreign = await api('POST', '/api/escalation-policies', {
      name: 'Foreign',
      steps: [{ channels: [c.id], escalate_after_seconds: 60 }, { channels: [other.id] }],
    });
    expect(foreign.code).to.equal('VALIDATION_FAILED');
    expect(paths(foreign)).to.deep.equal(['/steps/1/channels/0']);

    const created = await api<EscalationPolicy>('POST', '/api/escalation-policies', {
      name: 'Ops',
      steps: [{ channels: [c.id], escalate_after_seconds: 60 }, { channels: [c.id] }],
    });
    expect(created.status, created.text).to.equal(201);
    const p = created.body.data;
    expect(p).to.deep.include({ name: 'Ops', version: 1 });
    expect((await api('GET', `/api/escalation-policies/${p.id}`, undefined, { key: keys.b })).code).to.equal(
      'ESCALATION_POLICY_NOT_FOUND',
    );
    const patched = await api<EscalationPolicy>(
      'PATCH',
      `/api/escalation-policies/${p.id}`,
      { name: 'Ops team' },
      { headers: { 'if-match': '"1"' } },
    );
    expect(patched.body.data).to.deep.include({ name: 'Ops team', version: 2 });
    expect(
      (await api('PATCH', `/api/escalation-policies/${p.id}`, { name: 'x' }, { headers: { 'if-match': '"1"' } })).code,
    ).to.equal('PRECONDITION_FAILED');

    // The channel is in the policy: IN_USE until the policy goes.
    const inUse = await api('DELETE', `/api/channels/${c.id}`);
    expect(inUse.code).to.equal('IN_USE');
    expect(inUse.text).to.contain(p.id);

    // A monitor names only its tenant's channels and policy, checked when it is stored.
    const bad = await api('POST', '/api/monitors', {
      name: 'Shop',
      url: 'https://shop.example.com',
      paused: true,
      channels: [c.id, other.id],
      escalation_policy: 'esc_00000000000000000000',
    });
    expect(bad.code).to.equal('VALIDATION_FAILED');
    expect(paths(bad)).to.deep.equal(['/channels/1', '/escalation_policy']);
    const silencedUntil = '2020-01-01T00:00:00Z';
    const m = await api<Monitor>('POST', '/api/monitors', {
      name: 'Shop',
      url: 'https://shop.example.com',
      paused: true,
      channels: [c.id],
      escalation_policy: p.id,
      silenced_until: silencedUntil,
      silence_reason: 'migration',
    });
    expect(m.status, m.text).to.equal(201);
    expect(m.body.data).to.deep.include({
      channels: [c.id],
      escalation_policy: p.id,
      silenced_until: silencedUntil,
      silence_reason: 'migration',
    });
    const read = await api<Monitor>('GET', `/api/monitors/${m.body.data.id}`);
    expect(read.body.data).to.deep.include({ silenced_until: silencedUntil, silence_reason: 'migration' });
    const unsilenced = await api<Monitor>('PATCH', `/api/monitors/${m.body.data.id}`, {
      silenced_until: null,
      silence_reason: null,
    });
    expect(unsilenced.body.data).to.deep.include({ silenced_until: null, silence_reason: null, channels: [c.id] });
    const badPatch = await api('PATCH', `/api/monitors/${m.body.data.id}`, { channels: [other.id] });
    expect(badPatch.code).to.equal('VALIDATION_FAILED');
    expect(paths(badPatch)).to.deep.equal(['/channels/0']);

    const policyInUse = await api('DELETE', `/api/escalation-policies/${p.id}`);
    expect(policyInUse.code).to.equal('IN_USE');
    expect(policyInUse.text).to.contain(m.body.data.id);
    expect((await api('DELETE', `/api/monitors/${m.body.data.id}`)).status).to.equal(200);
    expect((await api('DELETE', `/api/escalation-policies/${p.id}`)).status).to.equal(200);
    expect((await api('DELETE', `/api/channels/${c.id}`)).status).to.equal(200);
  });

  describe('acknowledgement', () => {
    let incidents: IncidentAlertStore;
    let alerts: Awaited<ReturnType<typeof collectTopic>>;
    let monitorId = '';

    /** An open incident of tenant a, as the runner's dispatcher opens it. */
    const openIncident = async (): Promise<string> => {
      const id = uid('inc');
      const at = Date.now();
      const alert: StateAlert = {
        id: uid('alr'),
        type: 'monitor.down',
        monitor_id: monitorId,
        tenant_id: tenants.a,
        incident_id: id,
        created_at: new Date(at).toISOString(),
        monitor: { name: 'Checkout <b>', url: 'https://shop.example.com/' },
        check: { id, status: 'down', response_time: 0, status_code: 500, created_at: new Date(at).toISOString() },
      };
      await incidents.open({
        incident_id: id,
        tenant_id: tenants.a,
        monitor_id: monitorId,
        opened_at: at,
        alert,
        steps: [{ channels: ['chn_00000000000000000000'] }],
        next_due_at: at + 60_000,
      });
      return id;
    };
    const published = (incidentId: string, type: string): Promise<AlertMessage> =>
      eventually(`${type} of ${incidentId} in Kafka`, () =>
        Promise.resolve((alerts.values as AlertMessage[]).find((a) => a.incident_id === incidentId && a.type === type)),
      );

    before(async () => {
      incidents = new IncidentAlertStore(adminRegistry());
      alerts = await collectTopic(testStack().alertsTopic);
      const m = await api<Monitor>('POST', '/api/monitors', {
        name: 'Checkout',
        url: 'https://shop.example.com',
        paused: true,
      });
      monitorId = m.body.data.id;
    });
    after(async () => {
      await alerts?.stop();
    });

    it('acknowledges and takes back with an API key, publishing each to the alerts topic', async () => {
      const id = await openIncident();
      expect((await api('POST', `/api/incidents/${id}/acknowledge`, undefined, { key: keys.b })).code).to.equal(
        'INCIDENT_NOT_FOUND',
      );
      expect((await api('POST', `/api/incidents/${id}/acknowledge`, { by: 'me' })).code).to.equal('VALIDATION_FAILED');
      const ack = await api<{ acknowledged_at: string; acknowledged_by: string }>(
        'POST',
        `/api/incidents/${id}/acknowledge`,
      );
      expect(ack.status, ack.text).to.equal(200);
      expect(ack.body.data.acknowledged_by).to.equal(`key:${keyIdA}`);
      expect(ack.body.data.acknowledged_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      const a = await published(id, 'incident.acknowledged');
      expect(a).to.deep.include({ monitor_id: monitorId, tenant_id: tenants.a, actor: `key:${keyIdA}` });
      expect(a.id).to.match(/^alr_[0-9a-f]{24}$/);
      expect(a.monitor).to.deep.equal({ name: 'Checkout <b>', url: 'https://shop.example.com/' });
      expect((await incidents.get(id))?.acknowledged_by).to.equal(`key:${keyIdA}`);
      // Acknowledged again: the first who and when stay, and nothing more is published.
      const again = await api<{ acknowledged_at: string }>('POST', `/api/incidents/${id}/acknowledge`);
      expect(again.body.data).to.deep.equal(ack.body.data);

      const back = await api<{ acknowledged_at: null }>('POST', `/api/incidents/${id}/unacknowledge`, {});
      expect(back.body.data).to.deep.equal({ acknowledged_at: null, acknowledged_by: null });
      await published(id, 'incident.unacknowledged');
      expect((await incidents.get(id))?.acknowledged_at).to.equal(null);
      // One partition per monitor: the second acknowledgement, had it been sent, would be in by now.
      const mine = (alerts.values as AlertMessage[]).filter((m) => m.incident_id === id);
      expect(mine.map((m) => m.type)).to.deep.equal(['incident.acknowledged', 'incident.unacknowledged']);
      // Taken back when nobody acknowledged: the escalation clock is not restarted.
      const clock = await incidents.get(id);
      const twice = await api('POST', `/api/incidents/${id}/unacknowledge`);
      expect(twice.body.data).to.deep.equal({ acknowledged_at: null, acknowledged_by: null });
      expect((await incidents.get(id))?.next_due_at).to.equal(clock?.next_due_at);

      await incidents.resolve(id, Date.now());
      expect((await api('POST', `/api/incidents/${id}/acknowledge`)).code).to.equal('INCIDENT_NOT_FOUND');
      expect((await api('POST', '/api/incidents/nope/acknowledge')).code).to.equal('INCIDENT_NOT_FOUND');
    });

    it('answers 503 and changes nothing when Kafka does not take the acknowledgement', async () => {
      // A topic that does not exist (the test Kafka creates none by itself): every send fails.
      const broken = await runQuery({ ALERTS_TOPIC: uid('no-such-topic') });
      try {
        await eventually('key loaded', async () =>
          (await apiRequest(broken.url, 'GET', '/api/channels', undefined, { key: keys.a })).status === 200
            ? true
            : undefined,
        );
        const id = await openIncident();
        const r = await apiRequest(broken.url, 'POST', `/api/incidents/${id}/acknowledge`, undefined, { key: keys.a });
        expect(r.status, r.text).to.equal(503);
        expect((await incidents.get(id))?.acknowledged_at).to.equal(null);
      } finally {
        await broken.stop();
      }
    });

    it('shows the link’s page on GET without changing anything, and acknowledges as the recipient on POST', async () => {
      const id = await openIncident();
      const token = links.token(
        { tenant_id: tenants.a, incident_id: id, recipient: 'email:ops@example.com' },
        Date.now(),
      );
      const page = await fetch(`${query.url}/ack/${token}`);
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-security-policy')).to.contain("default-src 'none'");
      const html = await page.text();
      expect(html).to.contain('Checkout &lt;b&gt; is down');
      expect(html).to.contain(`<form method="post" action="/ack/${token}">`);
      expect(html).to.not.match(/https?:\/\/(?!127\.0\.0\.1|shop\.example\.com)/);
      expect((await incidents.get(id))?.acknowledged_at).to.equal(null);

      const done = await fetch(`${query.url}/ack/${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: '',
      });
      expect(done.status).to.equal(200);
      expect(await done.text()).to.contain('Acknowledged by email:ops@example.com');
      expect((await incidents.get(id))?.acknowledged_by).to.equal('email:ops@example.com');
      const a = await published(id, 'incident.acknowledged');
      expect(a.actor).to.equal('email:ops@example.com');
      const again = await fetch(`${query.url}/ack/${token}`, { method: 'POST' });
      expect(await again.text()).to.contain('already acknowledged');

      // The incidents API says who and when (the incident's down alert as the consumer writes it).
      const at = Math.floor(Date.now() / 1000);
      await adminClickHouse().insert({
        table: `${testStack().database}.alerts`,
        format: 'JSONEachRow',
        values: [
          { tenant_id: tenants.a, id: uid('alr'), monitor_id: monitorId, incident_id: id, type: 'monitor.down' },
          {
            tenant_id: tenants.a,
            id: uid('alr'),
            monitor_id: monitorId,
            incident_id: uid('inc'),
            type: 'monitor.down',
          },
        ].map((r) => ({
          ...r,
          created_at: at,
          check_id: id,
          status: 'down',
          status_code: 500,
          error: '',
          response_time: 0,
          inserted_at: at,
        })),
      });
      const listed = await api<Incident[]>('GET', `/api/monitors/${monitorId}/incidents`);
      expect(listed.status, listed.text).to.equal(200);
      expect(listed.body.data).to.have.length(2);
      const mine = listed.body.data.find((i) => i.id === id);
      expect(mine).to.deep.include({ acknowledged_by: 'email:ops@example.com' });
      expect(mine?.acknowledged_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      const other = listed.body.data.find((i) => i.id !== id);
      expect(other).to.deep.include({ acknowledged_at: null, acknowledged_by: null });

      const forged = `${token.slice(0, -2)}AA`;
      const bad = await fetch(`${query.url}/ack/${forged}`);
      expect(bad.status).to.equal(400);
      expect(await bad.text()).to.contain('LINK_INVALID');
      const json = await fetch(`${query.url}/ack/${forged}`, {
        method: 'POST',
        headers: { accept: 'application/json' },
      });
      expect(json.status).to.equal(400);
      expect(((await json.json()) as { code: string }).code).to.equal('LINK_INVALID');
      const expired = new AckLinks(parseSealingKeys(RUN_SECRETS_KEYS), 'http://127.0.0.1', 60).token(
        { tenant_id: tenants.a, incident_id: id, recipient: 'email:ops@example.com' },
        Date.now() - 120_000,
      );
      expect((await fetch(`${query.url}/ack/${expired}`)).status).to.equal(400);
    });
  });
});
