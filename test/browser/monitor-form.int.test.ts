import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import {
  MONITOR_TYPE_MODULES,
  MONITOR_TYPES,
  SETTING_NAMES,
  settingSchema,
  typesUsing,
} from '@telemetry/contract/monitor-catalog';
import type { Monitor } from '@telemetry/contract';
import { buildConsole, launchChromium } from '../support/browser.js';
import { eventually, newKey, runQuery, uid, type Running } from '../support/fixtures.js';
import { apiClient } from '../support/api.js';

/**
 * The console's monitor form as the contract defines it (libs/contract: the settings'
 * schema and the monitor type modules), in a real Chromium against the query service on
 * real ClickHouse. Monitors stay paused and aim at loopback: nothing is checked.
 */
describe('the console’s monitor form, from the contract (Chromium, real ClickHouse)', function () {
  this.timeout(120_000);
  let query: Running;
  let browser: Browser;
  let page: Page;
  let key: string;
  const errors: string[] = [];

  const api = apiClient(
    () => query.url,
    () => key,
  );

  async function create(body: Record<string, unknown>): Promise<Monitor> {
    const r = await api<Monitor>('POST', '/api/monitors', { name: uid('form'), paused: true, ...body });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    return r.body.data;
  }

  async function edit(id: string): Promise<void> {
    await page.goto(`${query.url}/#/monitors/${id}/edit`);
    await page.getByRole('button', { name: 'Save' }).waitFor();
  }

  async function save(id: string): Promise<Monitor> {
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(new RegExp(`#/monitors/${id}$`));
    return (await api<Monitor>('GET', `/api/monitors/${id}`)).body.data;
  }

  before(async () => {
    await buildConsole();
    query = await runQuery();
    key = await newKey({ kind: 'api', name: 'monitor form', scopes: ['monitors:read', 'monitors:write'] });
    await eventually('key loaded', async () =>
      (await api('GET', '/api/monitors?limit=1')).status === 200 ? true : undefined,
    );
    browser = await launchChromium();
    page = await (await browser.newContext()).newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${query.url}/`);
    await page.getByRole('link', { name: 'Use an API key instead' }).click();
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Monitors' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await query?.stop();
  });

  it('has a field per setting with its schema title, the type menu of the type modules, and each type’s own fields for that type only', async () => {
    await page.goto(`${query.url}/#/monitors/new`);
    await page.getByLabel('Name (required)').waitFor();
    // A setting's label, or a step list's legend (its steps' own labels are the steps').
    const labels = await page
      .locator('form.monitor-form > .field > label, form.monitor-form > .field > legend')
      .allTextContents();
    const notInForm = ['body', 'maintenance_windows'];
    expect(labels).to.deep.equal(
      SETTING_NAMES.filter((n) => !notInForm.includes(n)).map(
        (n) => settingSchema(n).title + (n === 'name' ? ' (required)' : ''),
      ),
    );
    const type = page.locator('#f-type');
    expect(await type.locator('option').allTextContents()).to.deep.equal(
      MONITOR_TYPES.map((t) => MONITOR_TYPE_MODULES[t].label),
    );
    expect(await type.inputValue()).to.equal(settingSchema('type').default);
    expect(await page.locator('#h-tls_min_days').textContent()).to.equal('tls monitors only; 14 when empty');
    for (const t of MONITOR_TYPES) {
      await type.selectOption(t);
      for (const name of SETTING_NAMES.filter((n) => !notInForm.includes(n))) {
        const users = typesUsing(name);
        expect(await page.locator(`#f-${name}`).isVisible(), `${name} on a ${t} monitor`).to.equal(
          users === undefined || users.includes(t),
        );
      }
    }
  });

  it('clears an emptied field on edit as its schema allows (null, {} or []), and sends no field of another type', async () => {
    const m = await create({
      url: 'http://127.0.0.1:9/health',
      keyword: 'ok',
      degraded_threshold_ms: 500,
      headers: { 'X-Token': 'abc' },
      expected_status_codes: [200],
    });
    await edit(m.id);
    await page.getByLabel('Keyword the body must contain').fill('');
    await page.getByLabel('Degraded above (ms)').fill('');
    await page.getByLabel('Request headers').fill('');
    await page.getByLabel('Expected status codes').fill('201, 3xx');
    const cleared = await save(m.id);
    expect(cleared).to.include({ keyword: null, degraded_threshold_ms: null });
    expect(cleared.headers).to.deep.equal({});
    expect(cleared.expected_status_codes).to.deep.equal([201, '3xx']);

    // An http monitor with a keyword becomes a tcp monitor: the keyword's field hides and
    // is not sent (the API would refuse it on a tcp monitor), and the API resets it.
    await api('PATCH', `/api/monitors/${m.id}`, { keyword: 'ok' });
    await edit(m.id);
    await page.locator('#f-type').selectOption('tcp');
    expect(await page.getByLabel('Keyword the body must contain').isVisible()).to.equal(false);
    await page.getByLabel('URL', { exact: true }).fill('tcp://127.0.0.1:9');
    await page.getByLabel('TCP: send once connected').fill('PING');
    const tcp = await save(m.id);
    expect(tcp).to.include({ type: 'tcp', tcp_send: 'PING', keyword: null });

    await edit(m.id);
    await page.getByLabel('TCP: send once connected').fill('');
    expect(await save(m.id)).to.include({ tcp_send: null });
    expect(errors).to.deep.equal([]);
  });
});
