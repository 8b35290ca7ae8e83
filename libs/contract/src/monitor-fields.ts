import { monitorSettingsSchema } from './monitor-schema.js';
import type { MonitorSettings } from './types.js';

/**
 * What derives from the one definition of a monitor (`monitorSettingsSchema`): the names
 * of its settings, their defaults and their labels. Browser-safe: the console uses it.
 */

export type SettingName = keyof MonitorSettings;

const PROPERTIES: Readonly<Record<SettingName, SettingSchema>> = monitorSettingsSchema.properties;

/** What the console and the store read of one setting's schema. */
export interface SettingSchema {
  readonly title: string;
  readonly description?: string;
  readonly type: string | readonly string[];
  readonly enum?: readonly unknown[];
  readonly format?: string;
  readonly default?: unknown;
}

/** Every setting, in the schema's order (the console's form order). */
export const SETTING_NAMES = Object.keys(PROPERTIES) as SettingName[];

/** A setting's schema: its title (the console's label), description (hint), type and default. */
export function settingSchema(name: SettingName): SettingSchema {
  return PROPERTIES[name];
}

/** The settings without a default: what a request must give (name; url but for heartbeat). */
export type RequiredSetting = 'name' | 'url';

/** A setting's default (the schema's `default`), a fresh copy (arrays and objects are not shared). */
export function settingDefault<N extends SettingName>(name: N): MonitorSettings[N] {
  return structuredClone(PROPERTIES[name].default) as MonitorSettings[N];
}

/**
 * `given` with every setting it lacks at its default: what a row stored before a setting
 * existed reads as. Only the missing ones are copied (a current row costs no copy).
 */
export function withDefaults<T extends object>(given: T): T & Omit<MonitorSettings, RequiredSetting> {
  const out = { ...given } as Record<string, unknown>;
  for (const name of SETTING_NAMES) {
    if (!(name in out) && PROPERTIES[name].default !== undefined) out[name] = settingDefault(name);
  }
  return out as T & Omit<MonitorSettings, RequiredSetting>;
}

/**
 * Each setting's default: what a new monitor gets unless its type's module or the request
 * says otherwise. A fresh copy each call.
 */
export function monitorDefaults(): Omit<MonitorSettings, RequiredSetting> {
  return withDefaults({});
}

/** Is `value` the setting's default (deep, for arrays and objects)? */
export function isDefaultSetting(name: SettingName, value: unknown): boolean {
  return JSON.stringify(value) === JSON.stringify(PROPERTIES[name].default);
}

/** Exactly the settings of `m` (no id, times or tenant), in the schema's order. */
export function settingsOf(m: MonitorSettings): MonitorSettings {
  const out: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) out[name] = m[name];
  return out as unknown as MonitorSettings;
}
