import { expect } from 'chai';
import type { Browser, Page, Request } from 'playwright-core';
import { MONITOR_LIMITS } from '@telemetry/contract';
import type { Monitor } from '@telemetry/contract';
import { buildConsole, launchChromium, PageErrors, photograph, showPageIfFailed } from '../support/browser.js';
import { eventually, newKey, runQuery, uid, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

/**
 * The monitor form's editors for issue 45's types (docs/console.md, "Steps, assertions and
 * variables"): an api_flow monitor's requests and a browser monitor's actions as editable
 * lists, assertions one per line, variables masked like headers, the API's problems next
 * to a step's field, in a real Chromium against the query service on real ClickHouse and
 * PostgreSQL. The monitors stay paused and aim at loopback: nothing is checked.
 */
describe('the console’s monitor form: steps, assertions and variables (Chromium, real ClickHouse)', function () {
  this.timeout(120_000);
  let query: Running;
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
    query = await runQuery();
    key = await newKey({ kind: 'api', name: 'monitor steps', scopes: ['monitors:read', 'monitors:write'] });
    await eventually('key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
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
    await query?.stop();
  });

  it('makes an api_flow monitor of two steps (added, filled, reordered) and shows them again, its variables masked', async () => {
    await newMonitor('api_flow', uid('flow'), 'http://127.0.0.1:9/api');
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
    expect(await page.locator('#f-api_steps-0-name').inputValue()).to.equal('sign in');
    expect(await page.locator('#f-api_steps-0-method').inputValue()).to.equal('POST');
    expect(await page.locator('#f-api_steps-1-name').inputValue()).to.equal('profile');
    expect(await steps('api_steps').locator('legend').allTextContents()).to.deep.equal(['Step 1', 'Step 2']);
    await page.getByLabel('Variables').fill('password: hunter2');
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
    expect(stored.variables).to.deep.equal({ password: '****' });

    // Reopened: the steps come back in order, the variable as ****; saved as shown, the
    // form sends **** back (which keeps the stored value) and the steps unchanged.
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

    // Removing a step on edit saves the one left.
    await page.goto(`${query.url}/#/monitors/${id}/edit`);
    await steps('api_steps').first().locator('.remove-step').click();
    expect(await steps('api_steps').count()).to.equal(1);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(new RegExp(`#/monitors/${id}$`));
    const after = (await api<Monitor>('GET', `/api/monitors/${id}`)).body.data;
    expect(after.api_steps.map((s) => s.name)).to.deep.equal(['profile']);
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
    expect(await page.getByLabel('Variables').inputValue()).to.equal('user: ****');
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
    await photograph(page, 'monitor-form-step-error');
    expect(pageErrors.errors).to.deep.equal([]);
  });
});
