import { assertionProblems } from '../assertions.js';
import { DEFAULT_TLS_MIN_DAYS } from '../limits.js';
import { plainUrlProblems, type MonitorTypeModule } from './module.js';

/** A TLS handshake: the certificate is valid for tls_min_days more days. */
export const tlsType: MonitorTypeModule<'tls'> = {
  type: 'tls',
  label: 'TLS certificate',
  urlForm: 'a tls monitor checks tls://host or tls://host:port (443 by default), with nothing else',
  urlHint: 'tls://host[:port]',
  fields: ['tls_min_days', 'confirm_delay_ms', 'assertions'],
  defaults: { tls_min_days: DEFAULT_TLS_MIN_DAYS },
  problems(s, url) {
    return [
      ...plainUrlProblems(url, 'tls', 'optional', this.urlForm),
      ...assertionProblems(s.assertions, '/assertions', 'tls'),
    ];
  },
  targets: (s) => [{ path: '/url', url: s.url }],
};
