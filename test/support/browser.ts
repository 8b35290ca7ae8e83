import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's Chromium: never a browser downloaded by a test tool. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Builds the console's bundles (what `npm test` already did through `npm run build:console`),
 * so that a browser test run on its own serves the current code.
 */
export async function buildConsole(): Promise<void> {
  await promisify(execFile)('npx', ['tsx', 'services/query-service/console/scripts/bundle.ts'], { timeout: 120_000 });
}

/**
 * Headless Chromium that talks to nothing but the pages it is sent to: no background
 * networking, updates, sync or QUIC (this machine's network is closed, and tests stay on
 * loopback).
 */
export async function launchChromium(extraArgs: readonly string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does), or set CHROMIUM_PATH`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-features=Translate,MediaRouter,OptimizationHints',
      ...extraArgs,
    ],
  });
}

/** Builds the browser SDK's bundles (what `npm test` already did), so that a gateway started now serves the current code. */
export async function buildSdk(): Promise<void> {
  await promisify(execFile)('npx', ['tsx', 'sdk/browser/scripts/bundle.ts'], { timeout: 120_000 });
}

/**
 * Errors a page logs to its console or throws, by page URL, for a test to find none. The
 * browser's own "Failed to load resource" lines for 4xx answers a step provokes on purpose
 * (a wrong key, an invalid field) are let through while `expectingHttpErrors` is set.
 */
export class PageErrors {
  readonly errors: string[] = [];
  expectingHttpErrors = false;

  watch(p: Page): void {
    p.on('console', (m) => {
      if (m.type() !== 'error') return;
      if (
        this.expectingHttpErrors &&
        /Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())
      )
        return;
      this.errors.push(`${p.url()}: ${m.text()}`);
    });
    p.on('pageerror', (e) => this.errors.push(`${p.url()}: ${e.message}`));
  }

  /** Runs `step`, which provokes 4xx answers on purpose. */
  async provoking<T>(step: () => Promise<T>): Promise<T> {
    this.expectingHttpErrors = true;
    try {
      return await step();
    } finally {
      this.expectingHttpErrors = false;
    }
  }
}

let axeSource: string | undefined;

/** No serious or critical axe-core violations on what `p` shows now. */
export async function expectAccessible(p: Page, what: string): Promise<void> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await p.evaluate(axeSource);
  const violations = await p.evaluate(async () => {
    const w = globalThis as unknown as {
      axe: {
        run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }>;
      };
    };
    const r = await w.axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  expect(violations, `${what}: axe-core`).to.deep.equal([]);
}

/** After a failed step (mocha's afterEach), what the page showed, on stderr. */
export async function showPageIfFailed(test: Mocha.Test | undefined, page: Page | undefined): Promise<void> {
  if (test?.state !== 'failed' || !page) return;
  const text = await page
    .locator('body')
    .innerText()
    .catch(() => '?');
  process.stderr.write(`page ${page.url()}:\n${text}\n`);
}

/**
 * With CONSOLE_SCREENSHOTS=dir (npm run docs:screenshots), photographs `p` at 1280 and 360
 * px wide into dir/`file`-1280.png and -360.png; without it, nothing.
 */
export async function photograph(p: Page, file: string): Promise<void> {
  const dir = process.env.CONSOLE_SCREENSHOTS;
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  for (const width of [1280, 360]) {
    await p.setViewportSize({ width, height: 900 });
    // Charts redraw to their new width.
    await p.waitForTimeout(400);
    await p.screenshot({ path: join(dir, `${file}-${width}.png`), fullPage: true });
  }
  await p.setViewportSize({ width: 1280, height: 900 });
}

/** Signs `p` in at `base` with the password form as `email`; answers once the monitors show. */
export async function signInWithPassword(p: Page, base: string, email: string, password: string): Promise<void> {
  await p.goto(`${base}/console/`);
  await p.locator('form#password-sign-in').waitFor();
  await p.locator('#sign-in-email').fill(email);
  await p.locator('#sign-in-password').fill(password);
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { name: 'Monitors' }).waitFor();
}
