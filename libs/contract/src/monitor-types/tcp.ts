import { plainUrlProblems, type MonitorTypeModule } from './module.js';

/** A TCP connection, with an optional exchange (send, then expect). */
export const tcpType: MonitorTypeModule<'tcp'> = {
  type: 'tcp',
  label: 'TCP port',
  urlForm: 'a tcp monitor checks tcp://host:port, with nothing else',
  urlHint: 'tcp://host:port',
  fields: ['tcp_send', 'tcp_expect', 'confirm_delay_ms'],
  defaults: {},
  problems(_s, url) {
    return plainUrlProblems(url, 'tcp', 'required', this.urlForm);
  },
  targets: (s) => [{ path: '/url', url: s.url }],
};
