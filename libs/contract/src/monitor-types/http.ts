import { assertionProblems } from '../assertions.js';
import { isForbiddenMonitorHeader } from '../limits.js';
import type { MonitorTypeModule } from './module.js';

/** An HTTP(S) request: status, keyword, response time. */
export const httpType: MonitorTypeModule<'http'> = {
  type: 'http',
  label: 'HTTP(S)',
  urlForm: 'an http monitor checks an http:// or https:// URL',
  urlHint: 'http(s)://…',
  fields: ['keyword', 'body', 'headers', 'confirm_delay_ms', 'assertions'],
  defaults: {},
  problems(s, url) {
    const problems = [];
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:')
      problems.push({ path: '/url', message: this.urlForm });
    if (s.body !== null && (s.method === 'GET' || s.method === 'HEAD')) {
      problems.push({ path: '/body', message: 'GET and HEAD checks send no body' });
    }
    for (const name of Object.keys(s.headers)) {
      if (isForbiddenMonitorHeader(name)) {
        problems.push({ path: `/headers/${name}`, message: 'is set by the connection itself and may not be set' });
      }
    }
    problems.push(...assertionProblems(s.assertions, '/assertions', 'http'));
    return problems;
  },
  targets: (s) => [{ path: '/url', url: s.url }],
};
