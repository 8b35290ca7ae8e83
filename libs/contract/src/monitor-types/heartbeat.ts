import { DEFAULT_HEARTBEAT_GRACE_SECONDS } from '../limits.js';
import type { MonitorTypeModule } from './module.js';

/** A heartbeat monitor's URL: it names the monitor (its job calls the gateway with its token). */
export function heartbeatUrl(monitorId: string): string {
  return `heartbeat://${monitorId}`;
}

/** A job calls us at least every interval: down when a call is late by more than the grace. */
export const heartbeatType: MonitorTypeModule<'heartbeat'> = {
  type: 'heartbeat',
  label: 'Heartbeat (a job calls us)',
  urlForm: 'a heartbeat monitor has no url: its job calls POST /api/heartbeats/{heartbeat_token}',
  fields: ['heartbeat_grace_seconds'],
  serverScheme: 'heartbeat:',
  defaults: { heartbeat_grace_seconds: DEFAULT_HEARTBEAT_GRACE_SECONDS },
  problems(s) {
    const problems = [];
    // Its URL is the server's (a heartbeat:// URL sent back from a GET is taken as it is).
    if (s.url !== '' && !s.url.startsWith('heartbeat://')) problems.push({ path: '/url', message: this.urlForm });
    if (s.locations.length > 1) {
      problems.push({ path: '/locations', message: 'a heartbeat monitor is watched from one location' });
    }
    return problems;
  },
  targets: () => [],
  // Its URL is its own, whatever was sent; a grace cleared with null is the default.
  settle: (s, id) => ({
    ...s,
    url: s.url === '' || s.url.startsWith('heartbeat://') ? heartbeatUrl(id) : s.url,
    heartbeat_grace_seconds: s.heartbeat_grace_seconds ?? DEFAULT_HEARTBEAT_GRACE_SECONDS,
  }),
};
