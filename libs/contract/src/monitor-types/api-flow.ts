import type { MonitorTypeModule } from './module.js';

/**
 * Up to 10 HTTP requests in order (docs/api-flows.md): each step's URL, headers and body
 * may use {{variables}}, extract values from its answer for the next steps, and carry
 * assertions. The monitor's URL is the flow's base: a step's path resolves against it.
 */
export const apiFlowType: MonitorTypeModule<'api_flow'> = {
  type: 'api_flow',
  label: 'API flow (multi-step)',
  urlForm: 'an api_flow monitor has an http:// or https:// base URL',
  urlHint: 'http(s)://… (base of the steps)',
  fields: ['api_steps', 'variables', 'confirm_delay_ms'],
  defaults: {},
  problems(_s, url) {
    // TODO(issue 45): steps (1..10), variables set before use, extract paths, assertions.
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:') return [{ path: '/url', message: this.urlForm }];
    return [];
  },
  targets: (s) => [{ path: '/url', url: s.url }],
};
