import type { Scope } from '@telemetry/contract/access';
import { session } from './api.js';
import { h } from './dom.js';

/**
 * Role-aware controls (docs/console.md): a control whose write the person's role lacks is
 * shown disabled, with why, rather than hidden, so that the page looks the same to every
 * role. The server still refuses (403 INSUFFICIENT_SCOPE); this only says so first. In
 * API-key mode nothing is disabled (the key's scopes are not known here).
 *
 * What a test can find:
 * - a disabled control: `[data-needs-scope="monitors:write"][disabled]`, with a `title`
 *   saying "Your role (viewer) cannot change monitors";
 * - the page's visible note: `.role-note[data-role-note="monitors:write"]`.
 */

/** What each write scope lets a person change, as the note says it. */
const CHANGES: Partial<Record<Scope, string>> = {
  'monitors:write': 'monitors',
  'channels:write': 'alert channels or escalation policies',
  'members:write': 'members or invitations',
  'keys:write': 'keys',
};

/** "Your role (viewer) cannot change monitors", or null when the person may. */
export function refusal(scope: Scope): string | null {
  if (session.can(scope)) return null;
  return `Your role (${session.view()?.role ?? 'unknown'}) cannot change ${CHANGES[scope] ?? scope}`;
}

/**
 * `el` as it stands when the person may do what `scope` allows; otherwise disabled with
 * the reason as its title. A link (`<a class="button">`) cannot be disabled: it becomes a
 * disabled button with the same text, id and classes.
 */
export function guard<E extends HTMLElement>(scope: Scope, el: E): E | HTMLButtonElement {
  const why = refusal(scope);
  el.setAttribute('data-needs-scope', scope);
  if (why === null) return el;
  const control =
    el instanceof HTMLAnchorElement
      ? h('button', { type: 'button', class: el.className || null, id: el.id || null }, el.textContent ?? '')
      : el;
  control.setAttribute('data-needs-scope', scope);
  control.setAttribute('disabled', '');
  control.setAttribute('title', why);
  return control;
}

/** Disables every control of `form` (its fields and buttons) when the role lacks `scope`. */
export function guardForm(scope: Scope, form: HTMLFormElement): HTMLFormElement {
  if (refusal(scope) === null) return form;
  for (const el of form.querySelectorAll<HTMLElement>('input, select, textarea, button')) guard(scope, el);
  return form;
}

/** The page's visible note when the role lacks `scope`, else nothing. */
export function roleNote(scope: Scope): HTMLElement | null {
  const why = refusal(scope);
  return why === null ? null : h('p', { class: 'role-note muted', 'data-role-note': scope, role: 'note' }, `${why}.`);
}
