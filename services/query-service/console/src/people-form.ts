import { ApiError } from './api.js';
import { failure, h, show, type Attrs } from './dom.js';

/**
 * The small forms of the people pages (sign-in, invitations, account, members, keys): a
 * labelled input, a submit that disables its button while it runs and says what failed in
 * the form's status line, and a secret shown once with a copy button.
 */

/** A labelled input `#id` (a text input unless `attrs` says otherwise), with an optional hint. */
export function field(id: string, label: string, attrs: Attrs = {}, hint?: string): HTMLElement {
  return h(
    'div',
    { class: 'field', id: `${id}-field` },
    h('label', { for: id }, label),
    h('input', { id, name: id, type: 'text', ...attrs, 'aria-describedby': hint ? `${id}-hint` : false }),
    hint ? h('small', { id: `${id}-hint`, class: 'muted' }, hint) : null,
  );
}

/** What `#id` of `form` holds, trimmed (a password as typed). */
export function value(form: HTMLFormElement, id: string): string {
  const el = form.querySelector<HTMLInputElement | HTMLSelectElement>(`#${id}`);
  if (!el) return '';
  return el instanceof HTMLInputElement && el.type === 'password' ? el.value : el.value.trim();
}

/** A status line (`#id`) a form says its outcome in. */
export function statusLine(id: string): HTMLElement {
  return h('div', { id, class: 'form-status', role: 'status', 'aria-live': 'polite' });
}

/**
 * On submit, runs `send` with the submit button disabled; a failure shows in `status`:
 * what `explain` says of it (by its code), else the API's message and code.
 */
export function onSubmit(
  form: HTMLFormElement,
  status: HTMLElement,
  send: () => Promise<void>,
  explain: (err: ApiError) => string | null = () => null,
): void {
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const button = form.querySelector<HTMLButtonElement>('button[type="submit"]');
    if (button) button.disabled = true;
    show(status);
    send().then(
      () => {
        if (button) button.disabled = false;
      },
      (err: unknown) => {
        if (button) button.disabled = false;
        const said = err instanceof ApiError ? explain(err) : null;
        show(status, said === null ? failure(err) : h('p', { class: 'error', role: 'alert' }, said));
      },
    );
  });
}

/**
 * A Copy button for `text`, shown in `field` (selected first, so that it can be copied by
 * hand where the clipboard is refused), and the status that says which it was.
 */
export function copyButton(
  field: HTMLInputElement | HTMLTextAreaElement,
  text: string,
  attrs: Attrs = {},
): HTMLElement[] {
  const said = h('span', { role: 'status' });
  const onclick = (): void => {
    field.select();
    navigator.clipboard.writeText(text).then(
      () => (said.textContent = ' Copied.'),
      () => (said.textContent = ' Select it and copy it by hand.'),
    );
  };
  return [h('button', { type: 'button', ...attrs, onclick }, 'Copy'), said];
}

/** A secret shown once (`#id`): read-only text, a copy button, and that it is not shown again. */
export function shownOnce(id: string, label: string, secret: string): HTMLElement {
  const input = h('input', { id, type: 'text', readonly: true, value: secret, class: 'secret', spellcheck: 'false' });
  return h(
    'div',
    { class: 'shown-once', 'data-shown-once': id },
    h('label', { for: id }, label),
    input,
    copyButton(input, secret, { id: `${id}-copy` }),
    h('p', { class: 'muted' }, 'It is shown this once: copy it now. It cannot be shown again.'),
  );
}
