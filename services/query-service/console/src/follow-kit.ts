import { failure, h, loading, show } from './dom.js';

/**
 * What the sections of a status page's console view (status-page-admin.ts) share: the
 * page, its monitors by name, and a section that loads by itself, so that one that fails
 * (or is slow) leaves the others usable; and the monitor choices the public page's
 * subscribe forms use too.
 */
export interface PageContext {
  slug: string;
  /** `/api/status-pages/{slug}`. */
  api: string;
  /** The page's monitors, in its order. */
  monitors: { id: string; name: string }[];
}

/**
 * A `section#id` titled `title`, whose body `draw` fills (a spinner first, the failure with
 * a retry if it throws); `draw` gets a redraw function for after a change.
 */
export function loadedSection(
  id: string,
  title: string,
  draw: (body: HTMLElement, redraw: () => void) => Promise<void>,
): HTMLElement {
  const body = h('div', { class: 'section-body' });
  const redraw = (): void => {
    show(body, loading());
    draw(body, redraw).catch((err: unknown) => show(body, failure(err, redraw)));
  };
  redraw();
  return h('section', { id, 'aria-labelledby': `h-${id}` }, h('h2', { id: `h-${id}` }, title), body);
}

/**
 * Check boxes `name` of a page's monitors (values their ids) in a fieldset `id` (`f-…`),
 * with its error slot `e-…` for the API's problems (form-kit's placeProblems).
 */
export function monitorChoices(
  monitors: readonly { id: string; name: string }[],
  id: string,
  name: string,
  legend: string,
  checked: readonly string[] = [],
): HTMLFieldSetElement {
  return h(
    'fieldset',
    { id, 'aria-describedby': `e${id.slice(1)}` },
    h('legend', {}, legend),
    monitors.map((m) =>
      h(
        'label',
        { class: 'check' },
        h('input', { type: 'checkbox', name, value: m.id, checked: checked.includes(m.id) }),
        ' ',
        m.name,
      ),
    ),
    h('span', { id: `e${id.slice(1)}`, class: 'field-error' }),
  );
}

/** The values of the checked boxes `name` inside `root`. */
export function checkedValues(root: ParentNode, name: string): string[] {
  return [...root.querySelectorAll<HTMLInputElement>(`input[name="${name}"]:checked`)].map((i) => i.value);
}
