import { expect } from 'chai';
import {
  createValidators,
  MONITOR_LIMITS,
  type CheckMessage,
  type Monitor,
  type ScreenshotMessage,
} from '@telemetry/contract';
import { collectTopic, eventually, newKey, runQuery, testStack, uid, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { CHROMIUM } from '../support/browser.js';
import { spawnService, type ServiceProcess } from '../support/processes.js';
import { SIGN_IN_PASSWORD, SIGN_IN_STEPS, SignInSite } from '../support/sign-in-site.js';

describe('browser checks (real Kafka, PostgreSQL, check runner processes with and without Chromium)', function () {
  this.timeout(180_000);
  const site = new SignInSite();
  const LOCATION = 'browser-east';
  const group = uid('browser-runners');
  let query: Running;
  let plain: ServiceProcess | undefined;
  let chromium: ServiceProcess | undefined;
  let checks: Awaited<ReturnType<typeof collectTopic>>;
  let shots: Awaited<ReturnType<typeof collectTopic>>;
  let key: string;
  let egress: Record<string, string>;
  const validators = createValidators();

  const api = apiClient(
    () => query.url,
    () => key,
  );
  const base = () => `http://127.0.0.1:${site.port}`;
  const signIn = (over: Record<string, unknown> = {}) =>
    api<Monitor>('POST', '/api/monitors', {
      name: uid('sign-in'),
      type: 'browser',
      url: `${base()}/`,
      // A check has room for its steps and, when it fails, its screenshot on a busy machine.
      interval_seconds: 8,
      timeout_ms: 7900,
      locations: [LOCATION],
      variables: { password: SIGN_IN_PASSWORD },
      browser_steps: SIGN_IN_STEPS,
      ...over,
    });
  const runner = (extra: Record<string, string>) =>
    spawnService('check-runner', {
      ...egress,
      RUNNER_ID: uid('browser-runner'),
      RUNNER_GROUP_ID: group,
      WEBHOOK_GROUP_ID: uid('browser-webhooks'),
      RUNNER_LOCATION: LOCATION,
      ...extra,
    });
  const checksOf = (id: string, since = 0): CheckMessage[] =>
    (checks.values as CheckMessage[]).filter((c) => c.monitor_id === id && Date.parse(c.created_at) >= since);
  const checkOf = (id: string, match: (c: CheckMessage) => boolean, since = 0) =>
    eventually(`a matching check of ${id}`, () => checksOf(id, since).find(match), 45_000);
  const pause = (id: string) => api('PATCH', `/api/monitors/${id}`, { paused: true });

  before(async () => {
    await site.start();
    egress = { EGRESS_ALLOW: `127.0.0.1:${site.port}` };
    query = await runQuery(egress);
    [checks, shots] = await Promise.all([
      collectTopic(testStack().checksTopic),
      collectTopic(testStack().screenshotsTopic),
    ]);
    key = await newKey({ kind: 'api', name: 'browser', scopes: ['checks:read', 'monitors:read', 'monitors:write'] });
    await eventually('the key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
  });

  after(async () => {
    await Promise.all([
      plain?.kill('SIGTERM'),
      chromium?.kill('SIGTERM'),
      query?.stop(),
      checks?.stop(),
      shots?.stop(),
    ]);
    await site.stop();
  });

  it("refuses bad steps at creation with the field's path, and a goto to a denied address", async () => {
    const bad = await signIn({
      paused: true,
      browser_steps: [
        { action: 'fill', selector: 'input[name=user]', value: '{{user}}' },
        { action: 'click' },
        { action: 'click', selector: 'button[' },
        { action: 'assert_url', url: '/welcome', selector: '#x' },
        { action: 'hover', selector: '#x' },
      ],
    });
    expect([bad.status, bad.body.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    // The schema refuses the unknown action first; without it, the module's problems show.
    expect(bad.body.details?.problems?.map((p) => p.path)).to.include('/browser_steps/4/action');
    const steps = await signIn({
      paused: true,
      browser_steps: [
        { action: 'fill', selector: 'input[name=user]', value: '{{user}}' },
        { action: 'click' },
        { action: 'click', selector: 'button[' },
        { action: 'assert_url', url: '/welcome', selector: '#x' },
      ],
    });
    expect([steps.status, steps.body.code]).to.deep.equal([400, 'VALIDATION_FAILED']);
    expect(steps.body.details?.problems?.map((p) => p.path)).to.deep.equal([
      '/browser_steps/0/value',
      '/browser_steps/1/selector',
      '/browser_steps/2/selector',
      '/browser_steps/3/selector',
    ]);
    const none = await signIn({ paused: true, browser_steps: [] });
    expect(none.body.details?.problems?.map((p) => p.path)).to.deep.equal(['/browser_steps']);
    const denied = await signIn({ paused: true, browser_steps: [{ action: 'goto', url: 'http://10.0.0.1/admin' }] });
    expect([denied.status, denied.body.code]).to.deep.equal([400, 'TARGET_NOT_ALLOWED']);
  });

  it('is never run by a runner without Chromium; a runner with it takes the browser monitor', async () => {
    plain = await runner({});
    const m = await signIn();
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    // The plain runner checks this location's http monitor all along: it is running and owns partitions.
    const web = await api<Monitor>('POST', '/api/monitors', {
      name: uid('web'),
      url: `${base()}/ping`,
      interval_seconds: 1,
      timeout_ms: 800,
      locations: [LOCATION],
    });
    expect(web.status, JSON.stringify(web.body)).to.equal(201);
    await eventually(
      'nine checks of the http monitor by the runner without Chromium',
      () => (checksOf(web.body.data.id).length >= 9 ? true : undefined),
      30_000,
    );
    // Over those seconds (at least one browser slot of 8 s), no browser check, and the site saw no visit.
    expect(checksOf(m.body.data.id)).to.deep.equal([]);
    expect(site.hits.filter((h) => h !== 'GET /ping')).to.deep.equal([]);
    await pause(web.body.data.id);

    chromium = await runner({ RUNNER_CHROMIUM_PATH: CHROMIUM, RUNNER_BROWSER_CONCURRENCY: '1' });
    // Its first check may be slow to start Chromium on a busy machine: the first up one counts.
    const up = await checkOf(m.body.data.id, (c) => c.status === 'up');
    expect(up, JSON.stringify(up)).to.include({ status: 'up', status_code: 200, location: LOCATION });
    expect(validators.checkMessage(up), JSON.stringify(validators.checkMessage.errors)).to.equal(true);
    expect(up.timings?.web_vitals?.lcp_ms).to.be.greaterThan(0);
    expect(up.timings?.navigation?.ttfb_ms).to.be.a('number');
    expect(up.timings?.navigation?.load_ms).to.be.greaterThan(0);
    expect(up.timings?.steps?.map((s) => [s.name, s.ok])).to.deep.equal([
      ['step 1 fill "input[name=user]"', true],
      ['step 2 fill "input[type=password]"', true],
      ['step 3 click "#submit"', true],
      ['step 4 assert_text "Welcome, alice"', true],
    ]);
    expect(up.screenshot).to.equal(undefined);
    // The page's requests went through the runner's fetch: the form post, its redirect and the cookie.
    expect(site.hits).to.include.members(['GET /', 'POST /login', 'GET /welcome']);

    // The site breaks: the assertion fails, named with its step, with a screenshot.
    site.broken = true;
    const since = Date.now();
    const down = await checkOf(m.body.data.id, (c) => c.status === 'down', since);
    await pause(m.body.data.id);
    expect(down).to.include({ error: 'assertion_failed', screenshot: true });
    expect(down.detail).to.match(/^step 4 assert_text "Welcome, alice": "Welcome, alice" not found/);
    expect(JSON.stringify(down)).to.not.include(SIGN_IN_PASSWORD);
    expect(down.timings?.steps?.at(-1)).to.include({ name: 'step 4 assert_text "Welcome, alice"', ok: false });
    const shot = await eventually(
      'the screenshot of the failed check',
      () => (shots.values as ScreenshotMessage[]).find((s) => s.check_id === down.id),
      20_000,
    );
    expect(validators.screenshotMessage(shot)).to.equal(true);
    expect(shot).to.include({ monitor_id: m.body.data.id, created_at: down.created_at });
    const png = Buffer.from(shot.png_base64, 'base64');
    expect(png.subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
    expect(png.length).to.be.within(100, MONITOR_LIMITS.maxScreenshotBytes);
  });

  it('blocks a request of the page to a denied address, and says so', async () => {
    const m = await signIn({
      url: `${base()}/leaky`,
      browser_steps: [{ action: 'assert_text', selector: 'h1', text: 'Leaky page' }],
    });
    expect(m.status, JSON.stringify(m.body)).to.equal(201);
    const c = await checkOf(m.body.data.id, () => true);
    await pause(m.body.data.id);
    expect(c).to.include({
      status: 'down',
      error: 'request_blocked',
      detail: 'request to http://10.0.0.1 blocked by the egress policy',
    });
    // The steps themselves passed: only the blocked request failed the check.
    expect(c.timings?.steps).to.deep.equal([
      { name: 'step 1 assert_text "h1"', duration_ms: c.timings!.steps![0]!.duration_ms, ok: true },
    ]);
  });
});
