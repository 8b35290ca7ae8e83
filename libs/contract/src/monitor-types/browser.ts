import type { MonitorTypeModule } from './module.js';

/**
 * A real browser (Debian's Chromium driven by playwright-core) opens the monitor's URL and
 * runs its declarative steps (docs/browser-checks.md). Only runners with a browser take it.
 */
export const browserType: MonitorTypeModule<'browser'> = {
  type: 'browser',
  label: 'Browser (Chromium)',
  urlForm: 'a browser monitor opens an http:// or https:// URL',
  urlHint: 'http(s)://… (the first page)',
  fields: ['browser_steps', 'variables', 'confirm_delay_ms'],
  defaults: {},
  problems(_s, url) {
    // TODO(issue 45): steps: each action's fields, selectors, variables set before use.
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:') return [{ path: '/url', message: this.urlForm }];
    return [];
  },
  targets: (s) => [{ path: '/url', url: s.url }],
};
