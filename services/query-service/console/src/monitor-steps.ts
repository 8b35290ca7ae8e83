import { BROWSER_ACTION_FIELDS, settingSchema, type BrowserStepField } from '@telemetry/contract/monitor-catalog';
import { h } from './dom.js';
import { fieldId } from './form-kit.js';

/**
 * The monitor form's step editors: an api_flow monitor's requests (`api_steps`) and a
 * browser monitor's actions (`browser_steps`), each an editable list (add, remove, move up
 * and down). Ids follow the JSON pointer of what a control sets (`f-api_steps-1-url` sets
 * `/api_steps/1/url`), so the API's problems land next to their control (monitor-form.ts).
 *
 * Ids tests use: `#f-api_steps`, `#f-browser_steps` (the lists), `fieldset.step` (one step),
 * `#f-api_steps-<i>-<property>` (a step's control), `.add-step`, `.move-up`, `.move-down`,
 * `.remove-step`.
 */

export type StepsSetting = 'api_steps' | 'browser_steps';

/** How a step property is edited: its text as typed, then as the API takes it. */
type StepKind = 'text' | 'select' | 'textarea' | 'number' | 'pairs' | 'rows' | 'codes';

interface StepField {
  key: string;
  label: string;
  kind: StepKind;
  hint?: string;
  options?: readonly string[];
  required?: boolean;
  /** browser_steps: the actions that use it (it shows for them only); undefined: every action. */
  actions?: readonly string[];
}

interface ItemsSchema {
  maxItems?: number;
  items: { properties: Record<string, { enum?: readonly string[] }> };
}

const items = (name: StepsSetting): ItemsSchema => settingSchema(name) as unknown as ItemsSchema;
/** The schema's enums: the methods of a request, the actions of a browser. */
const enumOf = (name: StepsSetting, key: string): readonly string[] => items(name).items.properties[key]?.enum ?? [];

const API_FIELDS: readonly StepField[] = [
  { key: 'name', label: 'Name', kind: 'text', hint: 'shown in the timings' },
  { key: 'method', label: 'Method', kind: 'select', options: enumOf('api_steps', 'method') },
  {
    key: 'url',
    label: 'URL',
    kind: 'text',
    required: true,
    hint: 'http(s)://… or a path (/…) resolved against the monitor’s URL; {{name}} uses a variable',
  },
  { key: 'headers', label: 'Headers', kind: 'pairs', hint: 'one per line, Name: value' },
  { key: 'body', label: 'Body', kind: 'textarea' },
  { key: 'expected_status_codes', label: 'Expected status codes', kind: 'codes', hint: 'comma-separated: 200, 2xx' },
  { key: 'extract', label: 'Extract', kind: 'pairs', hint: 'one per line, name: $.path or name: header.<name>' },
  { key: 'assertions', label: 'Assertions', kind: 'rows', hint: 'one per line: status == 200, $.token exists' },
];

/** The actions that use a browser step's property: the contract's table (the API validates by it). */
const actionsUsing = (key: BrowserStepField): readonly string[] =>
  Object.entries(BROWSER_ACTION_FIELDS)
    .filter(([, spec]) => spec.needs.includes(key) || spec.may.includes(key))
    .map(([action]) => action);

/** A browser step's properties; each shows for the actions that use it (docs/browser-checks.md). */
const BROWSER_FIELDS: readonly StepField[] = [
  { key: 'action', label: 'Action', kind: 'select', options: enumOf('browser_steps', 'action') },
  {
    key: 'selector',
    label: 'CSS selector',
    kind: 'text',
    actions: actionsUsing('selector'),
    hint: 'wait_for and assert_text: optional',
  },
  {
    key: 'value',
    label: 'Value',
    kind: 'text',
    actions: actionsUsing('value'),
    hint: 'fill: the text typed ({{name}} uses a variable); press: a key (Enter)',
  },
  {
    key: 'url',
    label: 'URL',
    kind: 'text',
    actions: actionsUsing('url'),
    hint: 'goto: http(s)://… or a path; assert_url: what the page’s URL must contain',
  },
  {
    key: 'text',
    label: 'Text',
    kind: 'text',
    actions: actionsUsing('text'),
    hint: 'what the page (or the selector’s element) must contain',
  },
  { key: 'timeout_ms', label: 'Timeout (ms)', kind: 'number' },
];

const FIELDS: Record<StepsSetting, readonly StepField[]> = { api_steps: API_FIELDS, browser_steps: BROWSER_FIELDS };

/** A step as its controls hold it: each property's text. */
type RawStep = Record<string, string>;

/** A stored step's property as its control shows it. */
function toText(f: StepField, v: unknown): string {
  if (v === undefined || v === null) return '';
  if (f.kind === 'pairs')
    return Object.entries(v as Record<string, string>)
      .map(([k, x]) => `${k}: ${x}`)
      .join('\n');
  if (f.kind === 'rows') return (v as unknown[]).join('\n');
  if (f.kind === 'codes') return (v as unknown[]).join(', ');
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** A control's text as the API takes it; undefined when it is empty (the step leaves it out). */
function fromText(f: StepField, raw: string): unknown {
  // A body keeps its own spaces and line breaks.
  if (f.kind === 'textarea') return raw.trim() === '' ? undefined : raw;
  const text = raw.trim();
  if (text === '') return undefined;
  switch (f.kind) {
    case 'number':
      return Number(text);
    case 'codes':
      return text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    case 'rows':
      return text
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '');
    case 'pairs':
      return Object.fromEntries(
        text
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => {
            const i = l.indexOf(':');
            return i < 0 ? [l.trim(), ''] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
          }),
      );
    default:
      return text;
  }
}

/** A new step: the first method or action chosen, the rest empty. */
function blank(name: StepsSetting): RawStep {
  return Object.fromEntries(FIELDS[name].map((f) => [f.key, f.kind === 'select' ? (f.options?.[0] ?? '') : '']));
}

/** Is the property `f` used by a step of this action? (api steps use all of theirs.) */
const uses = (f: StepField, action: string | undefined): boolean =>
  f.actions === undefined || action === undefined || f.actions.includes(action);

function stepField(name: StepsSetting, i: number, f: StepField, raw: RawStep): HTMLElement {
  const pointer = `/${name}/${i}/${f.key}`;
  const id = fieldId(pointer);
  const hintId = fieldId(pointer, 'h');
  const attrs = {
    id,
    'data-key': f.key,
    'aria-describedby': `${fieldId(pointer, 'e')}${f.hint ? ` ${hintId}` : ''}`,
    required: f.required ?? false,
  };
  const value = raw[f.key] ?? '';
  let control: HTMLElement;
  if (f.kind === 'select')
    control = h(
      'select',
      attrs,
      (f.options ?? []).map((o) => h('option', { value: o, selected: o === value }, o)),
    );
  else if (f.kind === 'textarea' || f.kind === 'pairs' || f.kind === 'rows')
    // data-lines: a problem's index in the list is a line of this text (monitor-form.ts).
    control = h('textarea', { ...attrs, rows: f.kind === 'textarea' ? 3 : 2, 'data-lines': f.kind === 'rows' }, value);
  else
    control = h('input', {
      ...attrs,
      type: f.kind === 'number' ? 'number' : 'text',
      inputmode: f.kind === 'number' ? 'numeric' : false,
      value,
    });
  return h(
    'div',
    { class: `field ${f.kind}`, hidden: !uses(f, name === 'browser_steps' ? raw.action : undefined) },
    h('label', { for: id }, f.label, f.required ? ' (required)' : ''),
    control,
    f.hint ? h('small', { id: hintId, class: 'muted' }, f.hint) : null,
    h('span', { id: fieldId(pointer, 'e'), class: 'field-error' }),
  );
}

/** What the list's controls hold now, step by step. */
function readRaw(list: HTMLElement): RawStep[] {
  return [...list.querySelectorAll<HTMLFieldSetElement>(':scope > fieldset.step')].map((step) =>
    Object.fromEntries(
      [...step.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>('[data-key]')].map((c) => [
        c.dataset.key!,
        c.value,
      ]),
    ),
  );
}

/** Draws the steps into `list` (each change of order redraws, so ids follow the positions). */
function draw(name: StepsSetting, list: HTMLElement, steps: RawStep[]): void {
  const max = items(name).maxItems ?? Infinity;
  const redraw = (next: RawStep[], focus?: (list: HTMLElement) => HTMLElement | null): void => {
    draw(name, list, next);
    focus?.(list)?.focus();
  };
  /**
   * What gets focus after a change: in step `i`, the first of `selectors` that is enabled
   * (the button pressed again, so a step moves on with each press), else Add step.
   */
  const at =
    (i: number, ...selectors: string[]): ((l: HTMLElement) => HTMLElement | null) =>
    (l) => {
      const step = l.querySelectorAll<HTMLFieldSetElement>(':scope > fieldset.step')[i];
      for (const sel of [...selectors, '[data-key]']) {
        const el = step?.querySelector<HTMLButtonElement>(sel);
        if (el && !el.disabled) return el;
      }
      return l.querySelector<HTMLElement>(':scope > .add-step');
    };
  list.replaceChildren(
    ...steps.map((raw, i) => {
      const step = h(
        'fieldset',
        { class: 'step' },
        h('legend', {}, `Step ${i + 1}`),
        h('span', { id: fieldId(`/${name}/${i}`, 'e'), class: 'field-error' }),
        FIELDS[name].map((f) => stepField(name, i, f, raw)),
        h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              class: 'move-up',
              'aria-label': `Move up step ${i + 1}`,
              disabled: i === 0,
              onclick: () => {
                const next = readRaw(list);
                [next[i - 1], next[i]] = [next[i]!, next[i - 1]!];
                redraw(next, at(i - 1, '.move-up', '.move-down'));
              },
            },
            'Move up',
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'move-down',
              'aria-label': `Move down step ${i + 1}`,
              disabled: i === steps.length - 1,
              onclick: () => {
                const next = readRaw(list);
                [next[i], next[i + 1]] = [next[i + 1]!, next[i]!];
                redraw(next, at(i + 1, '.move-down', '.move-up'));
              },
            },
            'Move down',
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'remove-step',
              'aria-label': `Remove step ${i + 1}`,
              onclick: () => {
                const next = readRaw(list);
                next.splice(i, 1);
                redraw(next, at(Math.min(i, next.length - 1), '.remove-step'));
              },
            },
            'Remove',
          ),
        ),
      );
      if (name === 'browser_steps') {
        // Only the properties the chosen action uses show (and are sent).
        const action = step.querySelector<HTMLSelectElement>('[data-key=action]')!;
        action.addEventListener('change', () => {
          for (const f of FIELDS[name]) {
            step
              .querySelector(`[data-key=${f.key}]`)!
              .closest('.field')!
              .toggleAttribute('hidden', !uses(f, action.value));
          }
        });
      }
      return step;
    }),
    h(
      'button',
      {
        type: 'button',
        class: 'add-step',
        disabled: steps.length >= max,
        onclick: () => redraw([...readRaw(list), blank(name)], at(steps.length)),
      },
      'Add step',
    ),
  );
}

/**
 * The editor of `name` showing `value` (the stored steps): a fieldset whose id is the
 * setting's control id (`f-api_steps`), titled by the setting's schema.
 */
export function stepsEditor(
  name: StepsSetting,
  value: unknown,
  label: string,
  hint: string | undefined,
): HTMLFieldSetElement {
  const list = h('div', { class: 'steps' });
  const stored = Array.isArray(value) ? (value as Record<string, unknown>[]) : [];
  draw(
    name,
    list,
    stored.map((s) => ({
      ...blank(name),
      ...Object.fromEntries(FIELDS[name].map((f) => [f.key, toText(f, s[f.key])])),
    })),
  );
  return h(
    'fieldset',
    {
      id: `f-${name}`,
      class: 'field steps',
      'aria-describedby': `e-${name}${hint ? ` h-${name}` : ''}`,
    },
    h('legend', {}, label),
    hint ? h('small', { id: `h-${name}`, class: 'muted' }, hint) : null,
    h('span', { id: `e-${name}`, class: 'field-error' }),
    list,
  );
}

/** The steps as the API takes them: each step's properties that are filled and (browser) used by its action. */
export function readSteps(editor: HTMLElement, name: StepsSetting): Record<string, unknown>[] {
  const list = editor.querySelector<HTMLElement>(':scope > .steps')!;
  return readRaw(list).map((raw) => {
    const step: Record<string, unknown> = {};
    for (const f of FIELDS[name]) {
      if (!uses(f, name === 'browser_steps' ? raw.action : undefined)) continue;
      const v = fromText(f, raw[f.key] ?? '');
      if (v !== undefined) step[f.key] = v;
    }
    return step;
  });
}
