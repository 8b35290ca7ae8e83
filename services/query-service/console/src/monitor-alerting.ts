import type { ChannelObject, EscalationPolicy, Monitor } from '@telemetry/contract';
import type { SettingName } from '@telemetry/contract/monitor-catalog';
import { get } from './api.js';
import { h, time } from './dom.js';

/**
 * The monitor form's alerting settings, with controls of their own: `channels` a
 * multi-select of the tenant's channels by name, `escalation_policy` a menu of its policies
 * (or none), `silenced_until` a local date and time. And the monitor page's silence notice.
 */

export interface Choice {
  value: string;
  text: string;
}

/** The tenant's channels and policies by name; what could not be read, said (the form works on). */
export interface AlertingChoices {
  channels: Choice[];
  policies: Choice[];
  problem?: unknown;
}

export async function alertingChoices(): Promise<AlertingChoices> {
  try {
    const [channels, policies] = await Promise.all([
      get<ChannelObject[]>('/api/channels'),
      get<EscalationPolicy[]>('/api/escalation-policies'),
    ]);
    return {
      channels: channels.map((c) => ({ value: c.id, text: `${c.name} (${c.type})` })),
      policies: policies.map((p) => ({ value: p.id, text: p.name })),
    };
  } catch (problem) {
    return { channels: [], policies: [], problem };
  }
}

/** The hints these settings get instead of their schema's (which speak of ids). */
export const ALERTING_HINTS: Partial<Record<SettingName, string>> = {
  channels: 'notified when it goes down and, per channel, when it comes back up; Ctrl or ⌘ and click to choose several',
  escalation_policy: 'the steps its incidents escalate through until acknowledged; none: notify the channels once',
  silenced_until: `in your time zone (UTC${utcOffset()}); until then no channel is notified; empty: not silenced`,
  silence_reason: 'shown with the silence on the monitor’s page',
};

function utcOffset(): string {
  const m = -new Date().getTimezoneOffset();
  const abs = Math.abs(m);
  return `${m < 0 ? '−' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** An ISO time as a datetime-local control shows it: the viewer's local time, to the minute. */
export function toLocalInput(iso: unknown): string {
  if (typeof iso !== 'string' || iso === '') return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** A datetime-local value (local time) as the API's UTC date-time. */
export function fromLocalInput(local: string): string {
  return new Date(local).toISOString();
}

/** Options for the ids given: by name where known, else the id (a channel this key cannot read). */
function withKnown(choices: Choice[], ids: string[]): Choice[] {
  const known = new Set(choices.map((c) => c.value));
  return [...choices, ...ids.filter((id) => !known.has(id)).map((id) => ({ value: id, text: id }))];
}

/**
 * The control of an alerting setting (`common`: its id, name and aria-describedby), or
 * undefined for any other setting.
 */
export function alertingControl(
  name: SettingName,
  common: Record<string, string>,
  value: unknown,
  choices: AlertingChoices,
): HTMLElement | undefined {
  if (name === 'channels') {
    const ids = Array.isArray(value) ? (value as string[]) : [];
    const options = withKnown(choices.channels, ids);
    return h(
      'select',
      { ...common, multiple: true, size: Math.min(Math.max(options.length, 2), 8) },
      options.map((o) => h('option', { value: o.value, selected: ids.includes(o.value) }, o.text)),
    );
  }
  if (name === 'escalation_policy') {
    const id = typeof value === 'string' ? value : '';
    return h(
      'select',
      common,
      withKnown([{ value: '', text: 'None: notify the channels once' }, ...choices.policies], id ? [id] : []).map((o) =>
        h('option', { value: o.value, selected: o.value === id }, o.text),
      ),
    );
  }
  if (name === 'silenced_until') return h('input', { ...common, type: 'datetime-local', value: toLocalInput(value) });
  return undefined;
}

/** The chosen options of a multi-select (the `channels` setting). */
export function chosen(el: Element): string[] {
  return el instanceof HTMLSelectElement ? [...el.selectedOptions].map((o) => o.value) : [];
}

/** Is the monitor silenced now? */
function silenced(m: Monitor): m is Monitor & { silenced_until: string } {
  return typeof m.silenced_until === 'string' && Date.parse(m.silenced_until) > Date.now();
}

/** The monitor list's mark of a silenced monitor (its status cell), or null. */
export function silenceMark(m: Monitor): HTMLElement | null {
  return silenced(m) ? h('span', { class: 'muted' }, ' silenced until ', time(m.silenced_until)) : null;
}

/** "Silenced until … (reason)" while the monitor is silenced; null otherwise. */
export function silenceNotice(m: Monitor): HTMLElement | null {
  if (!silenced(m)) return null;
  return h(
    'p',
    { class: 'banner stale', id: 'silenced', role: 'status' },
    'Silenced until ',
    time(m.silenced_until),
    m.silence_reason ? ` (${m.silence_reason})` : '',
    ': no channel is notified; checks and incidents go on.',
  );
}
