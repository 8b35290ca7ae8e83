import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import type { ChannelObject, EscalationPolicy, Incident, Monitor, StateAlert } from '@telemetry/contract';
import { signature } from '@telemetry/alerting';
import { createTenant, IncidentAlertStore, SCOPES } from '@telemetry/store';
import {
  buildConsole,
  expectAccessible,
  launchChromium,
  PageErrors,
  photograph,
  showPageIfFailed,
} from '../support/browser.js';
import {
  adminClickHouse,
  adminRegistry,
  eventually,
  newKey,
  runQuery,
  testStack,
  uid,
  type Running,
} from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { createAjv } from '../../libs/contract/src/ajv.js';
import { TestTarget } from '../support/target.js';
import { insertDownAlert } from '../support/tenants.js';

/**
 * The console's alerting pages in a real Chromium (Debian's) against the real query
 * service on ClickHouse and PostgreSQL: a signed-webhook channel aimed at a loopback
 * recording server is created from its schema's fields, sent a test (the page shows the
 * provider's answer; the server checks the signature), put in an escalation policy and a
 * monitor's settings, and an open incident is acknowledged from the monitor's page.
 */
describe('alerting in the console: channels, test sends, escalation, silencing and acknowledgement (Chromium)', function () {
  this.timeout(120_000);
  const provider = new TestTarget();
  const pageErrors = new PageErrors();
  const secret = `whsec-${randomUUID()}`;
  const channelName = `Ops hook ${uid('c')}`;
  const policyName = `Ops escalation ${uid('p')}`;
  const reason = 'database migration';
  let query: Running;
  let browser: Browser;
  let page: Page;
  let key: string;
  let tenantId: string;
  let monitor: Monitor;
  let channelId = '';
  let ch: ReturnType<typeof adminClickHouse>;

  const api = apiClient(
    () => query.url,
    () => key,
  );

  before(async () => {
    await buildConsole();
    await provider.start();
    ch = adminClickHouse();
    query = await runQuery();
    // A tenant of its own: the channels and policies listed are this test's alone.
    tenantId = (await createTenant(adminRegistry(), uid('alerting'))).tenant_id;
    key = await newKey({ tenantId, kind: 'api', name: 'alerting console', scopes: [...SCOPES] });
    await eventually('key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
    const created = await api<Monitor>('POST', '/api/monitors', {
      name: `Checkout ${uid('m')}`,
      url: provider.url('/site'),
      paused: true,
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    monitor = created.body.data;
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    pageErrors.watch(page);
    await page.goto(`${query.url}/`);
    await page.getByRole('link', { name: 'Use an API key instead' }).click();
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
  });

  afterEach(async function () {
    await showPageIfFailed(this.currentTest, page);
  });

  after(async () => {
    await browser?.close();
    await query?.stop();
    await provider.stop();
    await ch?.close();
  });

  it('creates a signed-webhook channel from its schema’s fields, with the API’s problem next to the field, and lists it masked', async () => {
    await page.getByRole('link', { name: 'Alert channels', exact: true }).click();
    await page.getByRole('heading', { name: 'Alert channels' }).waitFor();
    await page.getByText('No channels yet.').waitFor();
    await expectAccessible(page, 'channels, none yet');
    await page.getByRole('link', { name: 'New channel' }).click();
    await page.getByLabel('Type (required)').selectOption('webhook');
    await page.getByLabel('Name (required)').fill(channelName);
    await page.getByLabel('URL (required)').fill('ftp://example.invalid/hook');
    await page.getByLabel('Secret (required)').fill(secret);
    await page.getByLabel('Remind every (seconds)').fill('600');
    await pageErrors.provoking(async () => {
      await page.getByRole('button', { name: 'Create channel' }).click();
      await page
        .locator('#e-config-url')
        .filter({ hasText: /^\/config\/url: \S/ })
        .waitFor();
    });
    expect(await page.getByLabel('URL (required)').getAttribute('aria-invalid')).to.not.equal(null);
    expect(await page.locator('#form-error').innerText()).to.match(/VALIDATION_FAILED|INVALID/);
    await expectAccessible(page, 'new channel form with an error');
    await photograph(page, 'channel-form');

    await page.getByLabel('URL (required)').fill(provider.url('/hook'));
    await page.getByRole('button', { name: 'Create channel' }).click();
    await page.waitForURL(/#\/channels\/chn_[a-z0-9]+$/);
    channelId = /#\/channels\/(chn_[a-z0-9]+)$/.exec(page.url())![1]!;
    await page.getByRole('heading', { name: channelName }).waitFor();
    const stored = (await api<ChannelObject>('GET', `/api/channels/${channelId}`)).body.data;
    expect(stored).to.include({ type: 'webhook', name: channelName, remind_every_seconds: 600 });

    await page.getByRole('link', { name: '← All channels' }).click();
    const row = page.locator(`#channels tr[data-channel="${channelId}"]`);
    await row.waitFor();
    const shown = await row.innerText();
    expect(shown).to.contain('Signed webhook').and.contain('127.0.0.1');
    // Masked: the secret never, the URL's path not either.
    expect(await page.content()).to.not.contain(secret);
    expect(shown).to.not.contain('/hook');
    await expectAccessible(page, 'channels list');
    await photograph(page, 'channels');
  });

  it('sends a test and shows what the provider answered; the recording server got it signed', async () => {
    await page.locator(`#channels a[href="#/channels/${channelId}"]`).click();
    await page.getByRole('button', { name: 'Send test' }).click();
    const result = page.locator('#test-result');
    await result.filter({ hasText: 'Delivered.' }).waitFor();
    expect(await result.innerText())
      .to.contain('The provider answered 200')
      .and.contain('all systems operational');
    const [seen] = provider.requests('/hook');
    expect(seen, 'the recording server received the test').to.not.equal(undefined);
    expect(seen!.method).to.equal('POST');
    const t = Number(/t=(\d+)/.exec(String(seen!.headers['x-telemetry-signature']))?.[1]);
    expect(seen!.headers['x-telemetry-signature']).to.equal(signature(secret, seen!.body, t));
    expect(() => JSON.parse(seen!.body) as unknown).to.not.throw();
    await expectAccessible(page, 'channel page after a test');

    // A provider that fails: its status and answer are shown.
    provider.set('/hook', 'error');
    await page.getByRole('button', { name: 'Send test' }).click();
    await result.filter({ hasText: 'Not delivered.' }).waitFor();
    expect(await result.innerText())
      .to.contain('The provider answered 500')
      .and.contain('internal error');
    provider.set('/hook', 'ok');
    expect(provider.requests('/hook')).to.have.length(2);

    // The delivery log: the runner's attempts through this channel, as the stream consumer writes them.
    const ms = Date.now() - 60_000;
    const attempt = (n: number, status: string, code: number) => ({
      tenant_id: tenantId,
      monitor_id: monitor.id,
      attempted_at: Math.floor((ms + n * 1000) / 1000),
      id: randomUUID(),
      attempted_at_ms: ms + n * 1000,
      alert_id: `reminder-${n}`,
      alert_type: 'monitor.down',
      url: provider.url('/'),
      attempt: n,
      status,
      status_code: code,
      duration_ms: 15,
      error: '',
      inserted_at: Math.floor(ms / 1000),
      channel: 'webhook',
      channel_id: channelId,
      kind: 'reminder',
    });
    await ch.insert({
      table: `${testStack().database}.webhook_deliveries`,
      format: 'JSONEachRow',
      values: [attempt(1, 'retrying', 429), attempt(2, 'delivered', 200)],
    });
    await page.getByRole('button', { name: 'Refresh the log' }).click();
    await page.locator('#deliveries tbody tr').nth(1).waitFor();
    const log = await page.locator('#deliveries tbody').innerText();
    expect(log.split('\n').filter((l) => l.trim())).to.have.length(2);
    expect(log).to.contain('reminder').and.contain('retrying').and.contain('429').and.contain('delivered');
    await expectAccessible(page, 'channel page with its delivery log');
    await photograph(page, 'channel');
  });

  it('edits the channel: its secrets show masked and, sent back as shown, stay as stored', async () => {
    await page.goto(`${query.url}/#/channels/${channelId}/edit`);
    await page.getByRole('button', { name: 'Save' }).waitFor();
    expect(await page.getByLabel('URL (required)').inputValue()).to.equal(provider.url('/hook').replace('/hook', ''));
    expect(await page.getByLabel('Secret (required)').inputValue()).to.equal('****');
    await page.getByLabel('At most this many reminders').fill('5');
    await page.getByLabel('Title template').fill('{{monitor.name}} is {{kind}}');
    await expectAccessible(page, 'channel edit form');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(new RegExp(`#/channels/${channelId}$`));
    await page.getByText('every 600 s, at most 5').waitFor();
    const stored = (await api<ChannelObject>('GET', `/api/channels/${channelId}`)).body.data;
    expect(stored).to.deep.include({ remind_max: 5, templates: { title: '{{monitor.name}} is {{kind}}' } });
    // The stored URL and secret are still the ones given: the test reaches /hook, signed with the secret.
    const before = provider.requests('/hook').length;
    await page.getByRole('button', { name: 'Send test' }).click();
    await page.locator('#test-result').filter({ hasText: 'Delivered.' }).waitFor();
    const seen = provider.requests('/hook')[before]!;
    const t = Number(/t=(\d+)/.exec(String(seen.headers['x-telemetry-signature']))?.[1]);
    expect(seen.headers['x-telemetry-signature']).to.equal(signature(secret, seen.body, t));
  });

  it('makes a Slack channel from the same form: Send test posts the body Slack documents (test/fixtures/providers/slack.json)', async () => {
    const path = '/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX';
    await page.goto(`${query.url}/#/channels/new`);
    await page.getByLabel('Type (required)').selectOption('slack');
    await page.getByLabel('Name (required)').fill(`Ops Slack ${uid('s')}`);
    await page.getByLabel('URL (required)').fill(provider.url(path));
    expect(await page.getByLabel('Secret').count(), 'a Slack channel has no secret field').to.equal(0);
    await page.getByRole('button', { name: 'Create channel' }).click();
    await page.waitForURL(/#\/channels\/chn_[a-z0-9]+$/);
    // The webhook's path holds Slack's token: shown as scheme and host only.
    expect(await page.locator('dl.facts').innerText()).to.not.contain(path);
    await page.getByRole('button', { name: 'Send test' }).click();
    await page.locator('#test-result').filter({ hasText: 'Delivered.' }).waitFor();
    const [seen] = provider.requests(path);
    expect(seen, 'the recording server received the test').to.not.equal(undefined);
    // Slack's schema as transcribed (not strict: it is not ours), by the contract's ajv.
    const Ajv = createAjv([]).constructor as new (opts: object) => ReturnType<typeof createAjv>;
    const validate = new Ajv({ strict: false, allErrors: true }).compile(
      JSON.parse(readFileSync('test/fixtures/providers/slack.json', 'utf8')) as object,
    );
    const body = JSON.parse(seen!.body) as unknown;
    expect(validate(body), JSON.stringify(validate.errors)).to.equal(true);
  });

  it('puts the channel in an escalation policy, and refuses to delete the channel while the policy uses it', async () => {
    await page.getByRole('link', { name: 'Alert channels', exact: true }).click();
    await page.getByRole('link', { name: 'Escalation policies' }).click();
    await page.getByRole('heading', { name: 'New escalation policy' }).waitFor();
    await page.getByLabel('Name (required)').fill(policyName);
    await page.getByRole('group', { name: 'Step 1: notify' }).getByLabel(channelName).check();
    await page.getByLabel('Step 1: escalate after (seconds)').fill('300');
    await page.getByRole('button', { name: 'Add step' }).click();
    await page.getByRole('group', { name: 'Step 2: notify' }).getByLabel(channelName).check();
    await expectAccessible(page, 'escalation policy form');
    await photograph(page, 'escalation-policies');
    await page.getByRole('button', { name: 'Create policy' }).click();
    const item = page.locator('li[data-policy]', { hasText: policyName });
    await item.waitFor();
    expect(await item.innerText()).to.contain(`1. ${channelName} (then after 300 s) → 2. ${channelName}`);
    const policies = (await api<EscalationPolicy[]>('GET', '/api/escalation-policies')).body.data;
    expect(policies.map((p) => ({ name: p.name, steps: p.steps }))).to.deep.equal([
      {
        name: policyName,
        steps: [{ channels: [channelId], escalate_after_seconds: 300 }, { channels: [channelId] }],
      },
    ]);

    await page.goto(`${query.url}/#/channels/${channelId}`);
    page.once('dialog', (d) => void d.accept());
    await pageErrors.provoking(async () => {
      await page.getByRole('button', { name: 'Delete' }).click();
      await page.locator('#channel-notice', { hasText: 'IN_USE' }).waitFor();
    });
    expect(await page.locator('#channel-notice').innerText())
      .to.contain('used by these')
      .and.contain('escalation policy');
    expect((await api('GET', `/api/channels/${channelId}`)).status).to.equal(200);
    await expectAccessible(page, 'channel page, delete refused');
  });

  it('chooses the channel, the policy and a silence in the monitor form; the monitor page says it is silenced', async () => {
    await page.goto(`${query.url}/#/monitors/${monitor.id}/edit`);
    await page.getByRole('button', { name: 'Save' }).waitFor();
    await page.getByLabel('Alert channels').selectOption({ label: `${channelName} (webhook)` });
    await page.getByLabel('Escalation policy').selectOption({ label: policyName });
    const until = new Date(Date.now() + 2 * 86_400_000);
    until.setSeconds(0, 0);
    const p = (n: number): string => String(n).padStart(2, '0');
    await page
      .getByLabel('Silenced until')
      .fill(
        `${until.getFullYear()}-${p(until.getMonth() + 1)}-${p(until.getDate())}T${p(until.getHours())}:${p(until.getMinutes())}`,
      );
    await page.getByLabel('Why it is silenced').fill(reason);
    await expectAccessible(page, 'monitor form with alerting settings');
    await photograph(page, 'monitor-form-alerting');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(new RegExp(`#/monitors/${monitor.id}$`));
    const saved = (await api<Monitor>('GET', `/api/monitors/${monitor.id}`)).body.data;
    const policyId = (await api<EscalationPolicy[]>('GET', '/api/escalation-policies')).body.data[0]!.id;
    expect(saved.channels).to.deep.equal([channelId]);
    expect(saved.escalation_policy).to.equal(policyId);
    expect(Date.parse(saved.silenced_until!)).to.equal(until.getTime());
    expect(saved.silence_reason).to.equal(reason);
    const notice = page.locator('#silenced');
    await notice.waitFor();
    expect(await notice.innerText()).to.match(/^Silenced until .+ \(database migration\)/);
    await page.getByRole('link', { name: 'Monitors', exact: true }).click();
    await page.locator(`tr[data-monitor="${monitor.id}"]`, { hasText: 'silenced until' }).waitFor();

    // The form shows what is stored, by name.
    await page.goto(`${query.url}/#/monitors/${monitor.id}/edit`);
    await page.getByRole('button', { name: 'Save' }).waitFor();
    expect(await page.locator('#f-channels option:checked').allTextContents()).to.deep.equal([
      `${channelName} (webhook)`,
    ]);
    expect(await page.locator('#f-escalation_policy option:checked').textContent()).to.equal(policyName);
  });

  it('acknowledges an open incident from the monitor’s page: the row says who, and Un-acknowledge takes it back', async () => {
    // An open incident as the runner leaves it: its down alert in ClickHouse, its row in incident_alerts.
    const incidentId = randomUUID();
    const at = Math.floor(Date.now() / 1000) - 120;
    const alert: StateAlert = {
      id: randomUUID(),
      type: 'monitor.down',
      tenant_id: tenantId,
      monitor_id: monitor.id,
      incident_id: incidentId,
      created_at: new Date(at * 1000).toISOString(),
      monitor: { name: monitor.name, url: monitor.url ?? '' },
      check: {
        id: incidentId,
        status: 'down',
        response_time: 12,
        status_code: 503,
        created_at: new Date(at * 1000).toISOString(),
      },
    };
    await insertDownAlert(ch, { tenantId, monitorId: monitor.id, incidentId, alertId: alert.id, at });
    await new IncidentAlertStore(adminRegistry()).open({
      incident_id: incidentId,
      tenant_id: tenantId,
      monitor_id: monitor.id,
      opened_at: at * 1000,
      alert,
      steps: [{ channels: [channelId] }],
      next_due_at: null,
    });

    await page.goto(`${query.url}/#/monitors/${monitor.id}`);
    const row = page.locator(`.timeline li[data-incident="${incidentId}"]`);
    await row.waitFor();
    expect(await row.innerText()).to.contain('HTTP 503');
    await expectAccessible(page, 'monitor page with an open incident');
    await row.getByRole('button', { name: 'Acknowledge', exact: true }).click();
    await row.locator('.acknowledged').waitFor();
    const incidents = (await api<Incident[]>('GET', `/api/monitors/${monitor.id}/incidents`)).body.data;
    const acked = incidents.find((i) => i.id === incidentId)!;
    expect(acked.acknowledged_by).to.match(/^key:/);
    expect(await row.locator('.acknowledged').innerText()).to.contain(`Acknowledged by ${acked.acknowledged_by!}`);
    // Read again from the server, it stays.
    await page.reload();
    await row.locator('.acknowledged').waitFor();
    await expectAccessible(page, 'monitor page with an acknowledged incident');
    await photograph(page, 'monitor-acknowledged');

    await row.getByRole('button', { name: 'Un-acknowledge' }).click();
    await row.getByRole('button', { name: 'Acknowledge', exact: true }).waitFor();
    expect(await row.locator('.acknowledged').count()).to.equal(0);
    const after = (await api<Incident[]>('GET', `/api/monitors/${monitor.id}/incidents`)).body.data;
    expect(after.find((i) => i.id === incidentId)!.acknowledged_at).to.equal(null);
    expect(pageErrors.errors).to.deep.equal([]);
  });
});
