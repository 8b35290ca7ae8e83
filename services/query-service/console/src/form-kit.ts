import { ApiError, call, type Problem } from './api.js';
import { failure, h, show } from './dom.js';

/**
 * Form fields addressed by the JSON pointer of what they set (`/config/url`), so that the
 * API's problems (`details.problems`, by JSON pointer) land next to their field: the
 * channel and escalation-policy forms build on it.
 */

export interface FieldSpec {
  /** Where the value goes in the request body. */
  pointer: string;
  label: string;
  hint?: string;
  kind: 'text' | 'url' | 'secret' | 'number' | 'select' | 'checkbox' | 'lines' | 'textarea';
  options?: { value: string; text: string }[];
  required?: boolean;
  maxLength?: number;
}

/** The control's id: `f` and the pointer (`f-config-url`); its error slot is `e-…`, its hint `h-…`. */
export const fieldId = (pointer: string, prefix = 'f'): string => prefix + pointer.replace(/[^A-Za-z0-9_]+/g, '-');

/** A labelled control with its hint and error slot, showing `value`. */
export function fieldBlock(f: FieldSpec, value: unknown): HTMLElement {
  const id = fieldId(f.pointer);
  const attrs = {
    id,
    name: f.pointer,
    'aria-describedby': `${fieldId(f.pointer, 'e')}${f.hint ? ` ${fieldId(f.pointer, 'h')}` : ''}`,
    required: f.required ?? false,
    maxlength: f.maxLength,
  };
  const text = Array.isArray(value)
    ? value.join(', ')
    : typeof value === 'string' || typeof value === 'number'
      ? String(value)
      : '';
  let control: HTMLElement;
  if (f.kind === 'select') {
    control = h(
      'select',
      attrs,
      (f.options ?? []).map((o) => h('option', { value: o.value, selected: o.value === text }, o.text)),
    );
  } else if (f.kind === 'checkbox') control = h('input', { ...attrs, type: 'checkbox', checked: value === true });
  else if (f.kind === 'textarea') control = h('textarea', { ...attrs, rows: 4 }, text);
  else {
    const type = { url: 'url', secret: 'password', number: 'number' }[f.kind as string] ?? 'text';
    control = h('input', {
      ...attrs,
      type,
      value: text,
      // A secret is the channel's, not the person's: no password manager offers to keep it.
      autocomplete: f.kind === 'secret' ? 'new-password' : 'off',
      inputmode: f.kind === 'number' ? 'numeric' : false,
    });
  }
  return h(
    'div',
    { class: `field ${f.kind}` },
    h('label', { for: id }, f.label, f.required ? ' (required)' : ''),
    control,
    f.hint ? h('small', { id: fieldId(f.pointer, 'h'), class: 'muted' }, f.hint) : null,
    h('span', { id: fieldId(f.pointer, 'e'), class: 'field-error' }),
  );
}

/** What a field holds as the API takes it; undefined when it is empty. */
export function readField(form: HTMLFormElement, f: FieldSpec): unknown {
  const el = form.querySelector<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>(`#${fieldId(f.pointer)}`);
  if (!el) return undefined;
  if (f.kind === 'checkbox') return (el as HTMLInputElement).checked;
  const raw = el.value.trim();
  if (raw === '') return undefined;
  if (f.kind === 'number') return Number(raw);
  if (f.kind === 'lines') {
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
  // A template keeps its own line breaks and spaces.
  return f.kind === 'textarea' ? el.value : raw;
}

/** Sets `value` at `pointer` inside `obj`, making the objects on the way. */
export function setAt(obj: Record<string, unknown>, pointer: string, value: unknown): void {
  const parts = pointer.split('/').slice(1);
  let at = obj;
  for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
  at[parts[parts.length - 1]!] = value;
}

/** The value at `pointer` inside `obj`, or undefined. */
export function getAt(obj: unknown, pointer: string): unknown {
  let at = obj;
  for (const p of pointer.split('/').slice(1)) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[p];
  }
  return at;
}

/**
 * Puts each problem (its path and message) next to the field whose pointer is the longest
 * prefix of its path, and marks that field invalid; returns those no field shows (the form's summary says them).
 */
export function placeProblems(form: HTMLFormElement, pointers: readonly string[], problems: Problem[]): Problem[] {
  const mine = new Map<string, string[]>(pointers.map((p) => [p, []]));
  const rest: Problem[] = [];
  for (const problem of problems) {
    const owner = [...pointers]
      .filter((p) => problem.path === p || problem.path.startsWith(`${p}/`))
      .sort((a, b) => b.length - a.length)[0];
    if (owner === undefined) rest.push(problem);
    // The whole path, as the API names it: `/config/url: must match format "uri"`.
    else mine.get(owner)!.push(`${problem.path}: ${problem.message}`);
  }
  for (const [pointer, messages] of mine) {
    const slot = form.querySelector(`#${fieldId(pointer, 'e')}`);
    if (slot) slot.textContent = messages.join('; ');
    form.querySelector(`#${fieldId(pointer)}`)?.toggleAttribute('aria-invalid', messages.length > 0);
  }
  return rest;
}

/** A request's failure as the form's summary: the message and code, and the problems no field shows. */
export function problemSummary(err: unknown, rest: Problem[]): HTMLElement {
  const box = failure(err);
  if (rest.length > 0)
    box.append(
      h(
        'ul',
        {},
        rest.map((p) => h('li', {}, h('code', {}, p.path), ' ', p.message)),
      ),
    );
  return box;
}

/** Where a user named by IN_USE (`monitor mon_…`, `escalation policy esc_…`) is edited. */
const USER_PAGES: [RegExp, (id: string) => string][] = [
  [/^monitor (\S+)$/, (id) => `#/monitors/${id}/edit`],
  [/^escalation policy (\S+)$/, (id) => `#/escalation-policies/${id}`],
];

/** Who uses an object that cannot be deleted (IN_USE's `details.used_by`), each a link to where it is edited. */
function usedBy(details: Record<string, unknown>): HTMLElement | null {
  const list = Array.isArray(details.used_by) ? details.used_by.map(String) : [];
  if (list.length === 0) return null;
  return h(
    'div',
    { class: 'error', role: 'alert' },
    h('p', {}, 'It is used by these; remove it there first:'),
    h(
      'ul',
      {},
      list.map((u) => {
        for (const [re, page] of USER_PAGES) {
          const id = re.exec(u)?.[1];
          if (id) return h('li', {}, h('a', { href: page(id) }, u));
        }
        return h('li', {}, u);
      }),
    ),
  );
}

/**
 * Deletes `path` (a channel, a policy) once confirmed, then `done`; a refusal shows in
 * `notice`, with who uses it when it is in use (409 IN_USE).
 */
export function removeObject(what: string, path: string, notice: HTMLElement, done: () => void): void {
  if (!confirm(`Delete the ${what}?`)) return;
  call('DELETE', path).then(done, (err: unknown) =>
    show(notice, failure(err), err instanceof ApiError ? usedBy(err.details) : null),
  );
}
