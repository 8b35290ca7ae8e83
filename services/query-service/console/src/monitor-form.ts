import type { Monitor } from '@telemetry/contract';
import {
  MONITOR_TYPE_MODULES,
  SETTING_NAMES,
  settingSchema,
  typesUsing,
  type MonitorType,
  type SettingName,
  type SettingSchema,
} from '@telemetry/contract/monitor-catalog';
import { ApiError, call, get, type Problem } from './api.js';
import { h, loading, loadView, show } from './dom.js';
import {
  ALERTING_HINTS,
  alertingChoices,
  alertingControl,
  chosen,
  fromLocalInput,
  type AlertingChoices,
} from './monitor-alerting.js';
import { guard, roleNote } from './guard.js';
import { fieldId, problemSummary } from './form-kit.js';
import { readSteps, stepsEditor, type StepsSetting } from './monitor-steps.js';
import { runOnce } from './monitor-run.js';

/** The settings this form does not edit (the API does): every other field comes from the schema. */
const NOT_IN_FORM: readonly SettingName[] = ['body', 'maintenance_windows'];

interface Field {
  name: SettingName;
  label: string;
  hint?: string;
  /** lines: comma-separated; rows: one per line (assertions hold commas); steps: monitor-steps.ts. */
  kind: 'text' | 'url' | 'number' | 'select' | 'checkbox' | 'lines' | 'rows' | 'pairs' | 'multi' | 'datetime' | 'steps';
  options?: { value: string; text: string }[];
  required: boolean;
  /** What the control shows on a new monitor: the schema's default for a select or checkbox. */
  initial: unknown;
  /** What an emptied field sends on edit: null, [] or {} where the schema allows it; undefined: nothing. */
  cleared: unknown;
  /** The types that use it (it shows for them only); undefined: every type. */
  types?: MonitorType[];
  /** A list whose items may be integers (status codes): digits are sent as numbers. */
  integers?: boolean;
}

const modules = Object.values(MONITOR_TYPE_MODULES);
const listFormat = new Intl.ListFormat('en', { type: 'conjunction' });

/** Does a JSON Schema (an array's `items`) accept an integer? */
function takesIntegers(schema: unknown): boolean {
  const s = (schema ?? {}) as { type?: string | string[]; oneOf?: unknown[]; anyOf?: unknown[] };
  return [s.type ?? []].flat().includes('integer') || [...(s.oneOf ?? []), ...(s.anyOf ?? [])].some(takesIntegers);
}

/** A value as a control shows it: null as empty. */
function asText(v: unknown): string {
  return v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * Settings whose control is not their JSON type's: the tenant's channels and policies, a
 * local time, assertions (a comma is part of one: one per line).
 */
const OWN_KINDS: Partial<Record<SettingName, Field['kind']>> = {
  channels: 'multi',
  escalation_policy: 'select',
  silenced_until: 'datetime',
  assertions: 'rows',
};

/** The control of a setting: a menu for an enum, else by its JSON type (and format). */
function kindOf(name: SettingName, s: SettingSchema): Field['kind'] {
  const own = OWN_KINDS[name];
  if (own) return own;
  const types = [s.type].flat();
  if (s.enum) return 'select';
  if (types.includes('boolean')) return 'checkbox';
  if (types.includes('integer') || types.includes('number')) return 'number';
  // A list of objects (an api_flow's requests, a browser's actions): an editable list of steps.
  if (types.includes('array') && (s as { items?: { type?: string } }).items?.type === 'object') return 'steps';
  if (types.includes('array')) return 'lines';
  if (types.includes('object')) return 'pairs';
  return s.format === 'uri' ? 'url' : 'text';
}

/** Each type's URL in short, from its module: `http(s)://… for http, …; none for heartbeat`. */
function urlForms(): string {
  const given = modules.filter((m) => m.urlHint !== undefined).map((m) => `${m.urlHint!} for ${m.type}`);
  const none = modules.filter((m) => m.urlHint === undefined).map((m) => m.type);
  return [given.join(', '), none.length > 0 ? `none for ${listFormat.format(none)}` : undefined]
    .filter((p) => p !== undefined)
    .join('; ');
}

/** One setting's field, from its schema: title, description, type, enum, format, default. */
function field(name: SettingName): Field {
  const s = settingSchema(name);
  const types = [s.type].flat();
  const kind = kindOf(name, s);
  const users = typesUsing(name);
  // What a type's module puts in when the field is left empty (a tls monitor's 14 days).
  const typeDefaults = [...new Set(modules.flatMap((m) => (name in m.defaults ? [asText(m.defaults[name])] : [])))];
  const hint = [
    users ? `${listFormat.format(users)} monitors only` : undefined,
    name === 'url' ? urlForms() : undefined,
    ALERTING_HINTS[name] ?? s.description,
    typeDefaults.length > 0 ? `${typeDefaults.join(' or ')} when empty` : undefined,
  ].filter((p) => p !== undefined);
  return {
    name,
    label: s.title,
    ...(hint.length > 0 ? { hint: hint.join('; ') } : {}),
    kind,
    ...(s.enum
      ? {
          // An empty choice (null) first: a stored null stays null unless chosen.
          options: [...s.enum]
            .sort((a, b) => Number(b === null) - Number(a === null))
            .map((v) => ({
              value: asText(v),
              text: name === 'type' ? MONITOR_TYPE_MODULES[v as MonitorType].label : asText(v),
            })),
        }
      : {}),
    // A setting without a default must be given; but not the URL, which a type's server
    // may set itself (a heartbeat monitor's).
    required: s.default === undefined && !(name === 'url' && modules.some((m) => m.serverScheme !== undefined)),
    initial: kind === 'select' || kind === 'checkbox' ? s.default : undefined,
    cleared: types.includes('null')
      ? null
      : JSON.stringify(s.default) === '[]' || JSON.stringify(s.default) === '{}'
        ? structuredClone(s.default)
        : undefined,
    ...(users ? { types: users } : {}),
    ...(kind === 'lines' ? { integers: takesIntegers((s as { items?: unknown }).items) } : {}),
  };
}

const FIELDS: Field[] = SETTING_NAMES.filter((name) => !NOT_IN_FORM.includes(name)).map(field);

function control(f: Field, value: unknown, choices: AlertingChoices): HTMLElement {
  const common = { id: `f-${f.name}`, name: f.name, 'aria-describedby': `e-${f.name}${f.hint ? ` h-${f.name}` : ''}` };
  const own = alertingControl(f.name, common, value, choices);
  if (own) return own;
  switch (f.kind) {
    case 'select':
      return h(
        'select',
        common,
        (f.options ?? []).map((o) =>
          h('option', { value: o.value, selected: o.value === (value ?? f.options?.[0]?.value) }, o.text),
        ),
      );
    case 'checkbox':
      return h('input', { ...common, type: 'checkbox', checked: value === true });
    case 'pairs':
      return h(
        'textarea',
        { ...common, rows: 3 },
        Object.entries((value as Record<string, string> | undefined) ?? {})
          .map(([k, v]) => `${k}: ${v}`)
          .join('\n'),
      );
    case 'lines':
      return h('input', { ...common, type: 'text', value: ((value as unknown[] | undefined) ?? []).join(', ') });
    case 'rows':
      // data-lines: a problem's index in the list is a line of this text (showProblems).
      return h(
        'textarea',
        { ...common, rows: 3, 'data-lines': true },
        ((value as unknown[] | undefined) ?? []).join('\n'),
      );
    case 'number':
      return h('input', {
        ...common,
        type: 'number',
        inputmode: 'numeric',
        value: typeof value === 'string' || typeof value === 'number' ? String(value) : '',
      });
    default:
      return h('input', {
        ...common,
        type: f.kind === 'url' ? 'url' : 'text',
        required: f.required ?? false,
        value: typeof value === 'string' || typeof value === 'number' ? String(value) : '',
      });
  }
}

/** What the form says, as the API's JSON: empty optional fields are left out (create) or cleared (edit). */
function read(form: HTMLFormElement, editing: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) {
    if (f.kind === 'steps') {
      const editor = form.querySelector<HTMLElement>(`#f-${f.name}`)!;
      if (editor.hasAttribute('hidden')) continue;
      const steps = readSteps(editor, f.name as StepsSetting);
      if (steps.length > 0 || editing) out[f.name] = steps;
      continue;
    }
    const el = form.elements.namedItem(f.name) as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
    // A field of another type than the one chosen is not sent (the API puts it back to its default).
    if (el.closest('.field')?.hasAttribute('hidden')) continue;
    const raw = el instanceof HTMLInputElement && el.type === 'checkbox' ? el.checked : el.value.trim();
    if (f.kind === 'checkbox') out[f.name] = raw;
    else if (f.kind === 'multi') {
      const ids = chosen(el);
      if (ids.length > 0 || editing) out[f.name] = ids;
    } else if (raw === '') {
      if (editing && f.cleared !== undefined) out[f.name] = structuredClone(f.cleared);
    } else if (f.kind === 'number') out[f.name] = Number(raw);
    else if (f.kind === 'datetime') out[f.name] = fromLocalInput(String(raw));
    else if (f.kind === 'lines') {
      out[f.name] = String(raw)
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')
        .map((s) => (f.integers && /^\d+$/.test(s) ? Number(s) : s));
    } else if (f.kind === 'rows') {
      out[f.name] = String(raw)
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '');
    } else if (f.kind === 'pairs') {
      out[f.name] = Object.fromEntries(
        String(raw)
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => {
            const i = l.indexOf(':');
            return i < 0 ? [l.trim(), ''] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
          }),
      );
    } else out[f.name] = raw;
  }
  return out;
}

/** Shows the fields of the chosen type only (and those every type uses). */
function showTypeFields(form: HTMLFormElement): void {
  const type = (form.elements.namedItem('type') as HTMLSelectElement).value as MonitorType;
  for (const f of FIELDS) {
    if (f.types)
      form.querySelector(`#f-${f.name}`)!.closest('.field')!.toggleAttribute('hidden', !f.types.includes(type));
  }
}

/** The line of `text` that holds its `index`-th non-empty line (what a list's problem index points at). */
function lineOf(text: string, index: number): number {
  let seen = -1;
  const lines = text.split('\n');
  for (let n = 0; n < lines.length; n++) {
    if (lines[n]!.trim() !== '' && ++seen === index) return n + 1;
  }
  return index + 1;
}

/**
 * Puts the API's problems (`details.problems`, by JSON pointer) next to their fields: each
 * by the longest part of its path that has a control (`/api_steps/1/url`, else
 * `/api_steps/1`, else `/api_steps`), with the rest of the path before its message (a
 * list's index as its line: `line 3: …`). Returns the problems no field shows.
 */
function showProblems(form: HTMLFormElement, problems: Problem[]): Problem[] {
  for (const slot of form.querySelectorAll('.field-error')) slot.textContent = '';
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  const rest: Problem[] = [];
  for (const problem of problems) {
    const parts = problem.path.split('/').slice(1);
    // ajv says a missing property on its object: it belongs to that property's control.
    const missing = /required property '([^']+)'/.exec(problem.message)?.[1];
    if (missing) parts.push(missing);
    let placed = false;
    for (let n = parts.length; n >= 1 && !placed; n--) {
      const pointer = `/${parts.slice(0, n).join('/')}`;
      const slot = form.querySelector(`#${fieldId(pointer, 'e')}`);
      if (!slot || slot.closest('[hidden]')) continue;
      const control = form.querySelector<HTMLElement>(`#${fieldId(pointer)}`);
      const after = parts.slice(n);
      const where =
        after.length === 0 || (missing && after.length === 1)
          ? ''
          : control instanceof HTMLTextAreaElement && control.hasAttribute('data-lines') && /^\d+$/.test(after[0]!)
            ? `line ${lineOf(control.value, Number(after[0]))}:`
            : `${after.join('/')}:`;
      const text = `${where} ${problem.message}`.trim();
      slot.textContent = slot.textContent ? `${slot.textContent}; ${text}` : text;
      control?.setAttribute('aria-invalid', 'true');
      placed = true;
    }
    if (!placed) rest.push(problem);
  }
  return rest;
}

/** Create (`id` undefined) or edit a monitor; `notice` shows above the buttons (after a save). */
export async function monitorForm(
  main: HTMLElement,
  id: string | undefined,
  navigate: (hash: string) => void,
  notice?: string,
): Promise<void> {
  const title = id ? 'Edit monitor' : 'New monitor';
  let current: Monitor | undefined;
  // The channels and policies load meanwhile; when they cannot be read, the form says so and works on.
  const loadingChoices = alertingChoices();
  if (id) {
    current = await loadView(
      main,
      title,
      undefined,
      () => get<Monitor>(`/api/monitors/${id}`),
      () => void monitorForm(main, id, navigate),
    );
    if (!current) return;
  } else show(main, h('h1', {}, title), loading());
  const choices = await loadingChoices;
  const summary = h('div', { id: 'form-error', role: 'alert' }, notice ? h('p', {}, notice) : null);
  // Run once now: the settings as Save sends them (on edit the API applies them over the
  // stored monitor as a PATCH, so an emptied field is cleared there too); its problems land
  // on the fields like a save's.
  const run = runOnce(
    id,
    () => read(form, id !== undefined),
    (problems) => {
      const rest = showProblems(form, problems);
      form.querySelector<HTMLElement>('[aria-invalid]')?.focus();
      return rest;
    },
  );
  const form = h(
    'form',
    { novalidate: true, class: 'monitor-form' },
    FIELDS.map((f) =>
      f.kind === 'steps'
        ? stepsEditor(
            f.name as StepsSetting,
            current ? (current as unknown as Record<string, unknown>)[f.name] : f.initial,
            f.label,
            f.hint,
          )
        : h(
            'div',
            { class: `field ${f.kind}` },
            h('label', { for: `f-${f.name}` }, f.label, f.required ? ' (required)' : ''),
            control(f, current ? (current as unknown as Record<string, unknown>)[f.name] : f.initial, choices),
            f.hint ? h('small', { id: `h-${f.name}`, class: 'muted' }, f.hint) : null,
            h('span', { id: `e-${f.name}`, class: 'field-error' }),
          ),
    ),
    summary,
    h(
      'div',
      { class: 'actions' },
      guard(
        'monitors:write',
        h('button', { type: 'submit', class: 'primary', id: 'save-monitor' }, id ? 'Save' : 'Create monitor'),
      ),
      guard('monitors:write', run.button),
      h('a', { class: 'button', href: id ? `#/monitors/${id}` : '#/' }, 'Cancel'),
    ),
    run.result,
  );
  form.querySelector('#f-type')!.addEventListener('change', () => showTypeFields(form));
  showTypeFields(form);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const button = form.querySelector<HTMLButtonElement>('button[type=submit]')!;
    button.disabled = true;
    show(summary, h('span', { role: 'status' }, 'Saving…'));
    const body = read(form, id !== undefined);
    const done = id
      ? call<Monitor>('PATCH', `/api/monitors/${id}`, body)
      : call<Monitor>('POST', '/api/monitors', body);
    done.then(
      (r) => {
        const dropped = r.data.dropped_secrets ?? [];
        if (dropped.length === 0) {
          navigate(`#/monitors/${r.data.id}`);
          return;
        }
        // The URL moved to another origin: say what stayed behind, on the form as stored now.
        void monitorForm(
          main,
          r.data.id,
          navigate,
          `Saved. The URL moved to another host, so these stored secrets were dropped: ${dropped.join(', ')}. Enter them again to send them there.`,
        );
      },
      (err: unknown) => {
        button.disabled = false;
        const problems = err instanceof ApiError ? err.problems : [];
        // TARGET_NOT_ALLOWED names its field in details.problems too.
        show(summary, problemSummary(err, showProblems(form, problems)));
        const first = form.querySelector<HTMLElement>('[aria-invalid]');
        first?.focus();
      },
    );
  });
  const unread = choices.problem
    ? h(
        'p',
        { class: 'muted', id: 'choices-error' },
        `The alert channels and escalation policies could not be read (${choices.problem instanceof Error ? choices.problem.message : 'unknown error'}): those set show as ids.`,
      )
    : null;
  show(
    main,
    h('p', {}, h('a', { href: id ? `#/monitors/${id}` : '#/' }, '← Back')),
    h('h1', {}, title),
    roleNote('monitors:write'),
    unread,
    form,
  );
}
