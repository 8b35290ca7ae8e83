import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';

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
export async function launchChromium(): Promise<Browser> {
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
    ],
  });
}

/** Builds the browser SDK's bundles (what `npm test` already did), so that a gateway started now serves the current code. */
export async function buildSdk(): Promise<void> {
  await promisify(execFile)('npx', ['tsx', 'sdk/browser/scripts/bundle.ts'], { timeout: 120_000 });
}
