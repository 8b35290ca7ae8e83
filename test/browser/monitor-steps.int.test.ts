import { expect } from 'chai';
import type { Browser, Page, Request } from 'playwright-core';
import { MONITOR_LIMITS } from '@telemetry/contract';
import type { Monitor } from '@telemetry/contract';
import {
  buildConsole,
  expectAccessible,
  launchChromium,
  PageErrors,
  photograph,
  showPageIfFailed,
} from '../support/browser.js';
import { eventually, newKey, runQuery, runRunner, uid, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';
import { TestTarget } from '../support/target.js';

/**
 * The monitor form's editors for issue 45's types (docs/console.md, "Steps, assertions and
 * variables"): an api_flow monitor's requests and a browser monitor's actions as editable
 * lists, assertions one per line, variables masked like headers, the API's problems next
 * to a step's field, in a real Chromium against the query service on real ClickHouse and
 * PostgreSQL. The monitors stay paused and aim at loopback: nothing is checked but what
 * "Run once now" runs, through Kafka on a real check runner against a loopback target.
 */
describe('the console’s monitor form: steps, assertions and variables (Chromium, real ClickHouse)', function () {
  this.timeout(120_000);
  let query: Running;
  let runner: Running;
  const target = new TestTarget();
  /** The runner's location: run once goes to a runner of the monitor's first location. */
  const LOCATION = uid('form').toLowerCase().slice(0, 20);
  let browser: Browser;
  let page: Page;
  let key: string;
  const pageErrors = new PageErrors();

  const api = apiClient(
    () => query.url,
    () => key,
  );

  /** The body of the next request of `method` to `path` the page sends. */
  function nextBody(method: string, path: RegExp): Promise<Record<string, unknown>> {
    return page
      .waitForRequest((r: Request) => r.method() === method && path.test(new URL(r.url()).pathname))
      .then((r) => r.postDataJSON() as Record<string, unknown>);
  }

  async function newMonitor(type: string, name: string, url: string): Promise<void> {
    // From elsewhere: the same hash again would not draw a new form.
    await page.goto(`${query.url}/#/`);
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
    await page.goto(`${query.url}/#/monitors/new`);
    await page.getByLabel('Name (required)').fill(name);
    await page.locator('#f-type').selectOption(type);
    await page.locator('#f-url').fill(url);
    await page.getByLabel('Paused').check();
  }

  /** The step list of `setting`: its steps, in order. */
  const steps = (setting: string) => page.locator(`#f-${setting} fieldset.step`);
  const addStep = (setting: string) => page.locator(`#f-${setting} .add-step`).click();

  before(async () => {
    await buildConsole();
    await target.start();
    target.set('/up', 'ok');
    target.set('/down', 'error');
    [query, runner] = await Promise.all([
      runQuery({ RUN_ONCE_TIMEOUT_MS: '8000', RUN_ONCE_PER_MINUTE: '1000' }),
      runRunner({ RUNNER_LOCATION: LOCATION, RUNNER_GROUP_ID: uid('form-runners'), WEBHOOK_GROUP_ID: uid('wh') }),
    ]);
    key = await newKey({
      kind: 'api',
      name: 'monitor steps',
      scopes: ['monitors:read', 'monitors:write', 'checks:read'],
    });
    await eventually('key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
    // The runner's request group has joined once a run is answered.
    await eventually(
      'a runner answering run-once',
      async () =>
        (
          await api('POST', '/api/monitors/run-once', {
            settings: { url: target.url('/up'), locations: [LOCATION], timeout_ms: 2000 },
          })
        ).status === 200
          ? true
          : undefined,
      60_000,
    );
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
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
    await Promise.all([query?.stop(), runner?.stop()]);
    await target.stop();
  });

  it('makes an api_flow monitor of two steps (added, filled, reordered) and shows them again, its variables masked', async () => {
    // The test target's origin: a run of the saved monitor shows what the runner sends.
    await newMonitor('api_flow', uid('flow'), target.url('/api'));
    expect(await page.locator('#f-api_steps').isVisible()).to.equal(true);
    expect(await page.locator('#f-variables').isVisible()).to.equal(true);
    expect(await page.locator('#f-browser_steps').isVisible()).to.equal(false);
    expect(await page.locator('#f-assertions').isVisible()).to.equal(false);

    await addStep('api_steps');
    // A new step's first control has focus.
    expect(await page.locator(':focus').getAttribute('id')).to.equal('f-api_steps-0-name');
    await page.locator('#f-api_steps-0-name').fill('profile');
    await page.locator('#f-api_steps-0-url').fill('/me');
    await page.locator('#f-api_steps-0-headers').fill('Authorization: Bearer {{token}}');
    await page.locator('#f-api_steps-0-expected_status_codes').fill('200, 2xx');
    await page.locator('#f-api_steps-0-assertions').fill('$.name == "ada"\nresponse_time < 2000');
    await addStep('api_steps');
    await page.locator('#f-api_steps-1-name').fill('sign in');
    await page.locator('#f-api_steps-1-method').selectOption('POST');
    await page.locator('#f-api_steps-1-url').fill('/login');
    await page.locator('#f-api_steps-1-body').fill('{"user": "ada", "password": "{{password}}"}');
    await page.locator('#f-api_steps-1-extract').fill('token: $.token');
    await page.locator('#f-api_steps-1-assertions').fill('status == 200');
    expect(await steps('api_steps').count()).to.equal(2);
    expect(await steps('api_steps').first().locator('.move-up').isDisabled()).to.equal(true);
    expect(await steps('api_steps').last().locator('.move-down').isDisabled()).to.equal(true);

    // Signing in comes first: step 2 moves up, with everything typed into it.
    await steps('api_steps').nth(1).locator('.move-up').click();
    // Focus stays with the moved step (its Move up is disabled now: Move down).
    expect(await page.locator(':focus').getAttribute('aria-label')).to.equal('Move down step 1');
    expect(await page.locator('#f-api_steps-0-name').inputValue()).to.equal('sign in');
    expect(await page.locator('#f-api_steps-0-method').inputValue()).to.equal('POST');
    expect(await page.locator('#f-api_steps-1-name').inputValue()).to.equal('profile');
    expect(await steps('api_steps').locator('legend').allTextContents()).to.deep.equal(['Step 1', 'Step 2']);
    await page.getByLabel('Variables').fill('password: hunter2');
    await expectAccessible(page, 'an api_flow monitor’s form');
    await photograph(page, 'monitor-form-api-flow');

    const sent = nextBody('POST', /^\/api\/monitors$/);
    await page.getByRole('button', { name: 'Create monitor' }).click();
    const body = await sent;
    const expected = [
      {
        name: 'sign in',
        method: 'POST',
        url: '/login',
        body: '{"user": "ada", "password": "{{password}}"}',
        extract: { token: '$.token' },
        assertions: ['status == 200'],
      },
      {
        name: 'profile',
        method: 'GET',
        url: '/me',
        headers: { Authorization: 'Bearer {{token}}' },
        expected_status_codes: [200, '2xx'],
        assertions: ['$.name == "ada"', 'response_time < 2000'],
      },
    ];
    expect(body.api_steps).to.deep.equal(expected);
    expect(body.variables).to.deep.equal({ password: 'hunter2' });
    // A field of another type is not sent.
    expect(body).to.not.have.property('browser_steps');
    expect(body).to.not.have.property('assertions');
    await page.waitForURL(/#\/monitors\/mon_[0-9a-f]{16}$/);
    const id = /monitors\/(mon_[0-9a-f]{16})$/.exec(page.url())![1]!;
    const stored = (await api<Monitor>('GET', `/api/monitors/${id}`)).body.data;
    expect(stored.api_steps.map((s) => s.url)).to.deep.equal(['/login', '/me']);
    // The API shows a variable's value masked (libs/store/src/monitor-view.ts).
    expect(stored.variables).to.deep.equal({ password: '****' });

    // Reopened: the steps come back in order, the variable as the API shows it (****);
    // saved as shown, the form sends it back (**** keeps the stored value) and the steps unchanged.
    await page.goto(`${query.url}/#/monitors/${id}/edit`);
    await page.getByRole('button', { name: 'Save' }).waitFor();
    expect(await steps('api_steps').count()).to.equal(2);
    expect(await page.locator('#f-api_steps-0-name').inputValue()).to.equal('sign in');
    expect(await page.locator('#f-api_steps-0-extract').inputValue()).to.equal('token: $.token');
    expect(await page.locator('#f-api_steps-1-assertions').inputValue()).to.equal(
      '$.name == "ada"\nresponse_time < 2000',
    );
    expect(await page.getByLabel('Variables').inputValue()).to.equal('password: ****');
    const patched = nextBody('PATCH', new RegExp(`^/api/monitors/${id}$`));
    await page.getByRole('button', { name: 'Save' }).click();
    const patch = await patched;
    expect(patch.variables).to.deep.equal({ password: '****' });
    expect((patch.api_steps as unknown[]).length).to.equal(2);
    await page.waitForURL(new RegExp(`#/monitors/${id}$`));
    expect((await api<Monitor>('GET', `/api/monitors/${id}`)).body.data.variables).to.deep.equal({ password: '****' });
    // The stored value survived the save: a run of the saved monitor (at the runner's
    // location) signs in with hunter2, not with ****.
    const signIns = target.requests('/login').length;
    const run = await api('POST', '/api/monitors/run-once', { monitor_id: id, settings: { locations: [LOCATION] } });
    expect(run.status).to.equal(200);
    expect(
      target
        .requests('/login')
        .slice(signIns)
        .map((r) => r.body),
    ).to.deep.equal(['{"user": "ada", "password": "hunter2"}']);

    // Removing a step on edit saves the one left. (The last: profile uses the token that
    // sign in extracts, so without sign in the API refuses it.)
    await page.goto(`${query.url}/#/monitors/${id}/edit`);
    await steps('api_steps').last().locator('.remove-step').click();
    expect(await steps('api_steps').count()).to.equal(1);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(new RegExp(`#/monitors/${id}$`));
    const after = (await api<Monitor>('GET', `/api/monitors/${id}`)).body.data;
    expect(after.api_steps.map((s) => s.name)).to.deep.equal(['sign in']);
    expect(pageErrors.errors).to.deep.equal([]);
  });

  it('makes a browser monitor of three steps, each showing only the fields its action uses', async () => {
    await newMonitor('browser', uid('browser'), 'http://127.0.0.1:9/');
    expect(await page.locator('#f-browser_steps').isVisible()).to.equal(true);
    expect(await page.locator('#f-api_steps').isVisible()).to.equal(false);
    for (let i = 0; i < 3; i++) await addStep('browser_steps');
    const visible = async (i: number): Promise<string[]> => {
      const out: string[] = [];
      for (const k of ['selector', 'value', 'url', 'text', 'timeout_ms'])
        if (await page.locator(`#f-browser_steps-${i}-${k}`).isVisible()) out.push(k);
      return out;
    };
    await page.locator('#f-browser_steps-0-action').selectOption('goto');
    expect(await visible(0)).to.deep.equal(['url', 'timeout_ms']);
    await page.locator('#f-browser_steps-0-url').fill('/login');
    await page.locator('#f-browser_steps-1-action').selectOption('fill');
    expect(await visible(1)).to.deep.equal(['selector', 'value', 'timeout_ms']);
    await page.locator('#f-browser_steps-1-selector').fill('#user');
    await page.locator('#f-browser_steps-1-value').fill('{{user}}');
    await page.locator('#f-browser_steps-1-timeout_ms').fill('5000');
    await page.locator('#f-browser_steps-2-action').selectOption('assert_text');
    expect(await visible(2)).to.deep.equal(['selector', 'text', 'timeout_ms']);
    // Text typed for another action is not sent once the action changes.
    await page.locator('#f-browser_steps-2-action').selectOption('assert_url');
    await page.locator('#f-browser_steps-2-url').fill('/nowhere');
    await page.locator('#f-browser_steps-2-action').selectOption('assert_text');
    await page.locator('#f-browser_steps-2-selector').fill('h1');
    await page.locator('#f-browser_steps-2-text').fill('Welcome');
    await page.getByLabel('Variables').fill('user: ada');
    await expectAccessible(page, 'a browser monitor’s form');
    await photograph(page, 'monitor-form-browser');

    const sent = nextBody('POST', /^\/api\/monitors$/);
    await page.getByRole('button', { name: 'Create monitor' }).click();
    const expected = [
      { action: 'goto', url: '/login' },
      { action: 'fill', selector: '#user', value: '{{user}}', timeout_ms: 5000 },
      { action: 'assert_text', selector: 'h1', text: 'Welcome' },
    ];
    expect((await sent).browser_steps).to.deep.equal(expected);
    await page.waitForURL(/#\/monitors\/mon_[0-9a-f]{16}$/);
    const id = /monitors\/(mon_[0-9a-f]{16})$/.exec(page.url())![1]!;
    expect((await api<Monitor>('GET', `/api/monitors/${id}`)).body.data.browser_steps).to.deep.equal(expected);

    await page.goto(`${query.url}/#/monitors/${id}/edit`);
    await page.getByRole('button', { name: 'Save' }).waitFor();
    expect(await steps('browser_steps').count()).to.equal(3);
    expect(await page.locator('#f-browser_steps-1-action').inputValue()).to.equal('fill');
    expect(await visible(1)).to.deep.equal(['selector', 'value', 'timeout_ms']);
    expect(await page.locator('#f-browser_steps-1-timeout_ms').inputValue()).to.equal('5000');
    expect(await page.locator('#f-browser_steps-2-text').inputValue()).to.equal('Welcome');
    const variables = (await api<Monitor>('GET', `/api/monitors/${id}`)).body.data.variables;
    expect(await page.getByLabel('Variables').inputValue()).to.equal(`user: ${variables.user!}`);
    expect(pageErrors.errors).to.deep.equal([]);
  });

  it('shows the API’s problem next to a step’s field, and an assertion’s next to its line', async () => {
    await newMonitor('api_flow', uid('flow'), 'http://127.0.0.1:9/api');
    await addStep('api_steps');
    await page.locator('#f-api_steps-0-url').fill('/login');
    await addStep('api_steps');
    await page.locator('#f-api_steps-1-url').fill('ftp://127.0.0.1/file');
    await pageErrors.provoking(async () => {
      await page.getByRole('button', { name: 'Create monitor' }).click();
      await page.locator('#e-api_steps-1-url').filter({ hasText: /\S/ }).waitFor();
    });
    expect(await page.locator('#e-api_steps-1-url').textContent()).to.match(/must match pattern/);
    expect(await page.locator('#f-api_steps-1-url').getAttribute('aria-invalid')).to.equal('true');
    expect(await page.locator('#f-api_steps-0-url').getAttribute('aria-invalid')).to.equal(null);
    expect(await page.locator('#e-api_steps-0-url').textContent()).to.equal('');
    // The first field in error has focus.
    expect(await page.locator(':focus').getAttribute('id')).to.equal('f-api_steps-1-url');
    expect(await page.locator('#form-error').textContent()).to.contain('VALIDATION_FAILED');
    await photograph(page, 'monitor-form-step-error');

    await newMonitor('browser', uid('browser'), 'http://127.0.0.1:9/');
    await addStep('browser_steps');
    await page.locator('#f-browser_steps-0-action').selectOption('click');
    await page.locator('#f-browser_steps-0-selector').fill('button');
    await page.locator('#f-browser_steps-0-timeout_ms').fill('5');
    await pageErrors.provoking(async () => {
      await page.getByRole('button', { name: 'Create monitor' }).click();
      await page.locator('#e-browser_steps-0-timeout_ms').filter({ hasText: /\S/ }).waitFor();
    });
    expect(await page.locator('#e-browser_steps-0-timeout_ms').textContent()).to.match(/must be >= 100/);

    // http: assertions one per line; a problem with the third names its line (blank lines count).
    await newMonitor('http', uid('assert'), 'http://127.0.0.1:9/health');
    await page
      .getByLabel('Assertions')
      .fill(`status == 200\n\nresponse_time < 500\n${'x'.repeat(MONITOR_LIMITS.maxAssertionLength + 1)}`);
    await pageErrors.provoking(async () => {
      await page.getByRole('button', { name: 'Create monitor' }).click();
      await page.locator('#e-assertions').filter({ hasText: /\S/ }).waitFor();
    });
    expect(await page.locator('#e-assertions').textContent()).to.match(/^line 4: must NOT have more than/);
    expect(pageErrors.errors).to.deep.equal([]);
  });

  it('runs what the form says once on a runner, saving nothing; on edit, masked headers mean the stored ones', async () => {
    const name = uid('run');
    await newMonitor('http', name, target.url('/up'));
    await page.locator('#f-locations').fill(LOCATION);
    await page.locator('#f-timeout_ms').fill('2000');
    const sent = nextBody('POST', /^\/api\/monitors\/run-once$/);
    const seen = target.requests('/up').length;
    await page.locator('#run-once').click();
    await page.locator('#run-result .run-result').waitFor({ timeout: 20_000 });
    expect((await sent).settings).to.deep.include({ type: 'http', url: target.url('/up'), locations: [LOCATION] });
    expect(await sent).to.not.have.property('monitor_id');
    const up = (await page.locator('#run-result dl').first().innerText()).replace(/\s+/g, ' ');
    expect(up).to.match(/^Status up Response time [\d.]+ ms HTTP status 200 Location /);
    expect(target.requests('/up').length).to.equal(seen + 1);
    // Nothing was saved: no monitor of that name, and the form is still the new monitor's.
    const list = (await api<Monitor[]>('GET', '/api/monitors')).body.data;
    expect(list.map((m) => m.name)).to.not.include(name);
    expect(page.url()).to.match(/#\/monitors\/new$/);

    await page.locator('#f-url').fill(target.url('/down'));
    await page.locator('#run-once').click();
    await page.locator('#run-result .badge.down').waitFor({ timeout: 20_000 });
    expect(await page.locator('#run-result dl').first().innerText()).to.match(/HTTP status\s+500/);

    // A problem of the settings lands on its field, as a save's does.
    await page.locator('#f-type').selectOption('api_flow');
    await addStep('api_steps');
    await page.locator('#f-api_steps-0-url').fill('ftp://127.0.0.1/file');
    await pageErrors.provoking(async () => {
      await page.locator('#run-once').click();
      await page.locator('#run-result .error').waitFor();
    });
    expect(await page.locator('#run-result').innerText()).to.contain('VALIDATION_FAILED');
    expect(await page.locator('#e-api_steps-0-url').textContent()).to.match(/must match pattern/);

    // Editing a monitor with a stored header: the form shows ****, run once sends ****
    // and the monitor's id, and the runner sends the stored value. The keyword, emptied
    // in the form, is cleared for the run as Save would clear it (the stored one would fail).
    const stored = (
      await api<Monitor>('POST', '/api/monitors', {
        name: uid('run'),
        url: target.url('/up'),
        locations: [LOCATION],
        timeout_ms: 2000,
        paused: true,
        headers: { 'X-Token': 'stored-secret' },
        keyword: 'never-in-the-body',
      })
    ).body.data;
    await page.goto(`${query.url}/#/monitors/${stored.id}/edit`);
    expect(await page.getByLabel('Request headers').inputValue()).to.equal('X-Token: ****');
    await page.getByLabel('Keyword the body must contain').fill('');
    const edited = nextBody('POST', /^\/api\/monitors\/run-once$/);
    const before = target.requests('/up').length;
    await page.locator('#run-once').click();
    await page.locator('#run-result .badge.up').waitFor({ timeout: 20_000 });
    const body = await edited;
    expect(body.monitor_id).to.equal(stored.id);
    expect(body.settings).to.deep.include({ headers: { 'X-Token': '****' }, keyword: null });
    const hits = target.requests('/up').slice(before);
    expect(hits.map((r) => r.headers['x-token'])).to.deep.equal(['stored-secret']);
    expect(pageErrors.errors).to.deep.equal([]);
  });

  it('shows a failed browser run’s steps, Web Vitals and screenshot, and a refusal’s problems on the fields', async () => {
    // NOTE: this answer comes from a test-local route, in the shape of the contract's
    // RunOnceResult: this branch's runner has no browser probe (issue45-browser's). The
    // test above runs the real endpoint on a real runner.
    const sent: Record<string, unknown>[] = [];
    let answer: { status: number; body: unknown } = { status: 500, body: {} };
    await page.route('**/api/monitors/run-once', async (route) => {
      sent.push(route.request().postDataJSON() as Record<string, unknown>);
      await route.fulfill({
        status: answer.status,
        contentType: 'application/json',
        body: JSON.stringify(answer.body),
      });
    });
    await newMonitor('browser', uid('browser'), 'http://127.0.0.1:9/');
    await addStep('browser_steps');
    await page.locator('#f-browser_steps-0-action').selectOption('assert_text');
    await page.locator('#f-browser_steps-0-text').fill('Welcome');
    answer = {
      status: 200,
      body: {
        success: true,
        data: {
          status: 'down',
          response_time: 812.4,
          status_code: 200,
          error: 'step_failed',
          detail: 'step 2 assert_text "Welcome": the page does not contain it',
          location: 'default',
          timings: {
            steps: [
              { name: 'open http://127.0.0.1:9/', duration_ms: 640.2, ok: true, status_code: 200 },
              { name: 'step 2 assert_text "Welcome"', duration_ms: 172.2, ok: false },
            ],
            navigation: { ttfb_ms: 12.5, dom_content_loaded_ms: 80, load_ms: 120 },
            web_vitals: { lcp_ms: 140, cls: 0.01 },
          },
          screenshot: `data:image/png;base64,${PNG_1x1}`,
        },
      },
    };
    await page.locator('#run-once').click();
    await page.locator('#run-result .run-result').waitFor();
    const result = (await page.locator('#run-result').innerText()).replace(/\s+/g, ' ');
    expect(result).to.contain('Result of one run (not saved)');
    expect(result).to.contain('down');
    expect(result).to.contain('step 2 assert_text "Welcome": the page does not contain it');
    expect(result).to.contain('Largest contentful paint 140 ms');
    expect(await page.locator('#run-steps tbody tr').count()).to.equal(2);
    expect(await page.locator('#run-steps tbody tr').last().innerText()).to.match(/172\.2 ms\s+down failed/);
    expect(
      await page
        .locator('#run-screenshot')
        .evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
    ).to.equal(1);
    // What a create would send, and no monitor id for a monitor not saved yet.
    expect(sent[0]).to.have.keys(['settings']);
    expect((sent[0]!.settings as { browser_steps: unknown }).browser_steps).to.deep.equal([
      { action: 'assert_text', text: 'Welcome' },
    ]);
    await expectAccessible(page, 'run once now’s answer');
    await photograph(page, 'monitor-run-once');

    answer = {
      status: 400,
      body: {
        success: false,
        error: 'the monitor is not valid',
        code: 'VALIDATION_FAILED',
        details: { problems: [{ path: '/settings/browser_steps/0/selector', message: 'is not a CSS selector' }] },
      },
    };
    await page.locator('#f-browser_steps-0-action').selectOption('click');
    await page.locator('#f-browser_steps-0-selector').fill('[oops');
    await pageErrors.provoking(async () => {
      await page.locator('#run-once').click();
      await page.locator('#run-result .error').waitFor();
    });
    expect(await page.locator('#run-result').innerText()).to.contain('VALIDATION_FAILED');
    expect(await page.locator('#e-browser_steps-0-selector').textContent()).to.equal('is not a CSS selector');
    expect(await page.locator(':focus').getAttribute('id')).to.equal('f-browser_steps-0-selector');
    await page.unroute('**/api/monitors/run-once');
    expect(pageErrors.errors).to.deep.equal([]);
  });
});

/** A 1×1 PNG. */
const PNG_1x1 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
