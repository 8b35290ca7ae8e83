import { DEFAULT_ICMP_COUNT } from '../limits.js';
import { plainUrlProblems, type MonitorTypeModule } from './module.js';

/** ICMP echo (ping): round-trip time and loss over icmp_count packets (docs/monitors.md, "icmp"). */
export const icmpType: MonitorTypeModule<'icmp'> = {
  type: 'icmp',
  label: 'Ping (ICMP)',
  urlForm: 'an icmp monitor pings icmp://host, with nothing else',
  urlHint: 'icmp://host',
  fields: ['icmp_count'],
  defaults: { icmp_count: DEFAULT_ICMP_COUNT },
  problems(_s, url) {
    return plainUrlProblems(url, 'icmp', 'none', this.urlForm);
  },
  // TODO(issue 45): the address judged by the egress policy (an IP literal now; a name when it resolves).
  targets: (s) => [{ path: '/url', url: s.url }],
};
