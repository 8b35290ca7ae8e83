import type { MonitorType } from '../limits.js';
import type { SettingName } from '../monitor-fields.js';
import type { MonitorSettings } from '../types.js';
import type { Problem } from '../validators.js';

/**
 * What the egress policy must judge before a monitor is stored: a URL the runner will
 * connect to, or an address and port (a resolver). Names are judged when a check connects.
 */
export type Target = { path: string; url: string } | { path: string; address: string; port: number };

/**
 * One monitor type: everything the API, the store and the console know of it. The runner
 * has its probe in a map keyed by the same types (services/check-runner/src/probes).
 * Adding a type: a module here, a line in index.ts, its value in MONITOR_TYPES, its probe.
 */
export interface MonitorTypeModule<T extends MonitorType = MonitorType> {
  readonly type: T;
  /** What the console's type menu says. */
  readonly label: string;
  /** How its URL looks: the API's problem when it does not fit. */
  readonly urlForm: string;
  /** Its URL in short, for the console's hint (`tcp://host:port`); none when the server sets it. */
  readonly urlHint?: string;
  /**
   * The settings this type uses that not every type does. Set on a monitor of a type
   * that does not list them, they are refused; a change of type puts the old type's ones
   * back to their defaults.
   */
  readonly fields: readonly SettingName[];
  /**
   * The URL scheme (`heartbeat:`) of a URL the server sets for this type; such a type
   * needs no URL in a request, and no other type may use the scheme.
   */
  readonly serverScheme?: string;
  /** This type's own defaults, over the schema's (a tls monitor's 14 days). */
  readonly defaults: Partial<MonitorSettings>;
  /** Problems of a monitor of this type: its URL (`url` when it parses) and its fields. */
  problems(s: MonitorSettings, url: URL | undefined): Problem[];
  /** What the egress policy must judge before the monitor is stored. */
  targets(s: MonitorSettings): Target[];
  /** The settings as stored, once the server has set its part (a heartbeat monitor's URL). */
  settle?(s: MonitorSettings, id: string): MonitorSettings;
}

/** Problems of a URL that must be `scheme://host[:port]` and nothing else. */
export function plainUrlProblems(
  url: URL | undefined,
  scheme: string,
  port: 'required' | 'optional' | 'none',
  form: string,
): Problem[] {
  if (!url) return [];
  const plain =
    url.protocol === `${scheme}:` &&
    (port === 'required' ? url.port !== '' : port === 'none' ? url.port === '' : true) &&
    (url.pathname === '' || url.pathname === '/') &&
    !url.search &&
    !url.hash &&
    !url.username &&
    !url.password;
  return plain ? [] : [{ path: '/url', message: form }];
}
