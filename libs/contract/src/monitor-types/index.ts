import { MONITOR_TYPES, type MonitorType } from '../limits.js';
import {
  isDefaultSetting,
  monitorDefaults,
  SETTING_NAMES,
  settingDefault,
  type SettingName,
} from '../monitor-fields.js';
import type { MonitorSettings } from '../types.js';
import { parsesAsUrl } from '../urls.js';
import type { Problem } from '../validators.js';
import { apiFlowType } from './api-flow.js';
import { browserType } from './browser.js';
import { dnsType } from './dns.js';
import { heartbeatType } from './heartbeat.js';
import { httpType } from './http.js';
import { icmpType } from './icmp.js';
import type { MonitorTypeModule } from './module.js';
import { tcpType } from './tcp.js';
import { tlsType } from './tls.js';

export type { MonitorTypeModule, Target } from './module.js';
export { resolverAddress } from './dns.js';
export { heartbeatUrl } from './heartbeat.js';
export { icmpHost, icmpMinTimeoutMs, ICMP_INTERVAL_MS, ICMP_MIN_WAIT_MS } from './icmp.js';
export { stepUrlTargetOrigin } from './step-url.js';
export { resolveStepUrl, stepLabel, stepPrefix, stepUrlOrigin, type ApiStep } from './api-flow.js';
export {
  BROWSER_ACTION_FIELDS,
  browserStepLabel,
  resolveBrowserUrl,
  selectorProblem,
  type BrowserStep,
  type BrowserStepField,
} from './browser.js';

/**
 * Every monitor type's module, keyed by the schema's `type` enum (MONITOR_TYPES): a value
 * without its module does not compile.
 */
export const MONITOR_TYPE_MODULES: { readonly [T in MonitorType]: MonitorTypeModule<T> } = {
  http: httpType,
  tcp: tcpType,
  tls: tlsType,
  dns: dnsType,
  heartbeat: heartbeatType,
  api_flow: apiFlowType,
  browser: browserType,
  icmp: icmpType,
};

export function monitorTypeModule(type: MonitorType): MonitorTypeModule {
  return MONITOR_TYPE_MODULES[type];
}

const MODULES: readonly MonitorTypeModule[] = MONITOR_TYPES.map(monitorTypeModule);

/** The types that use a setting, in MONITOR_TYPES order; undefined when every type does. */
export function typesUsing(name: SettingName): MonitorType[] | undefined {
  const users = MODULES.filter((m) => m.fields.includes(name)).map((m) => m.type);
  return users.length === 0 ? undefined : users;
}

/** The settings some types use and others do not, with the types that use them. */
const TYPE_FIELDS = new Map<SettingName, MonitorType[]>(
  SETTING_NAMES.flatMap((name) => {
    const users = typesUsing(name);
    return users ? [[name, users] as const] : [];
  }),
);

function listed(types: readonly string[]): string {
  return types.length === 1 ? types[0]! : `${types.slice(0, -1).join(', ')} and ${types.at(-1)!}`;
}

/**
 * The problems of a monitor's type (the rules JSON Schema cannot state): its URL, the
 * settings of other types set on it, and its module's own.
 */
export function typeProblems(s: MonitorSettings): Problem[] {
  const mod = monitorTypeModule(s.type);
  const problems: Problem[] = [];
  let url: URL | undefined;
  if (s.url !== '' && parsesAsUrl(s.url)) url = new URL(s.url);
  // The schema's format check refuses it in a request; a monitor stored before that check
  // and patched now is refused here.
  else if (s.url !== '') problems.push({ path: '/url', message: 'is not a URL this server can parse' });
  if (s.url === '' && mod.serverScheme === undefined) problems.push({ path: '/url', message: 'is required' });
  const owner = MODULES.find((m) => m.serverScheme !== undefined && m.serverScheme === url?.protocol);
  if (owner && owner !== mod) {
    problems.push({ path: '/url', message: `${owner.serverScheme}// is the URL of ${owner.type} monitors only` });
    url = undefined;
  }
  for (const [name, users] of TYPE_FIELDS) {
    if (!users.includes(s.type) && !isDefaultSetting(name, s[name])) {
      problems.push({ path: `/${name}`, message: `applies to ${listed(users)} monitors only` });
    }
  }
  return [...problems, ...mod.problems(s, url)];
}

/** The settings of a new monitor of `type` before the request's: the schema's defaults, then the type's. */
export function typeDefaults(type: MonitorType): Omit<MonitorSettings, 'name' | 'url'> {
  return { ...monitorDefaults(), type, ...monitorTypeModule(type).defaults };
}

/**
 * `s` as a monitor of another type: the settings the old type used and the new does not
 * go back to their defaults, and the new type's own defaults come.
 */
export function retype(s: MonitorSettings, type: MonitorType): MonitorSettings {
  const out: Record<string, unknown> = { ...s, type };
  for (const name of monitorTypeModule(s.type).fields) {
    if (!monitorTypeModule(type).fields.includes(name)) out[name] = settingDefault(name);
  }
  return { ...(out as MonitorSettings), ...monitorTypeModule(type).defaults };
}

/** The settings as stored, once the server has set its part (settle of the type's module). */
export function settled(s: MonitorSettings, id: string): MonitorSettings {
  return monitorTypeModule(s.type).settle?.(s, id) ?? s;
}
