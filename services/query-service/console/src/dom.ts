/** A few DOM helpers: the console needs no framework. */

type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined | ((e: Event) => void)>;

/** An element with attributes (on* are listeners; false or null leave one out) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  }
  return el;
}

/** Replaces what `el` holds. */
export function show(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c);
  }
}

const LOCAL = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A time in the viewer's zone, with UTC on hover. */
export function time(iso: string | null): HTMLElement | string {
  if (!iso) return '—';
  const d = new Date(iso);
  return h('time', { datetime: iso, title: `${iso.replace('T', ' ').replace('Z', '')} UTC` }, LOCAL.format(d));
}

export function loading(what = 'Loading…'): HTMLElement {
  return h('p', { class: 'loading', role: 'status' }, what);
}

/** An error the user can read, with what to do next. */
export function failure(err: unknown, retry?: () => void): HTMLElement {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string }).code;
  return h(
    'div',
    { class: 'error', role: 'alert' },
    h('p', {}, h('strong', {}, 'Something went wrong: '), message, code ? ` (${code})` : ''),
    retry ? h('button', { type: 'button', onclick: retry }, 'Try again') : null,
  );
}

/**
 * The first load of a view: `title` and a spinner (`what`) while `load` runs; when it fails,
 * `title` and the failure with a retry instead, and undefined (the view goes no further).
 */
export async function loadView<T>(
  main: HTMLElement,
  title: string,
  what: string | undefined,
  load: () => Promise<T>,
  retry: () => void,
): Promise<T | undefined> {
  show(main, h('h1', {}, title), loading(what));
  try {
    return await load();
  } catch (err) {
    show(main, h('h1', {}, title), failure(err, retry));
    return undefined;
  }
}

interface Range {
  readonly id: string;
  readonly label: string;
}

/** A labelled `<select id>` of time ranges; `pick` is told the one chosen. */
export function rangePicker<T extends readonly [Range, ...Range[]]>(
  id: string,
  ranges: T,
  pick: (range: T[number]) => void,
): HTMLElement {
  const onchange = (e: Event): void =>
    pick(ranges.find((r) => r.id === (e.target as HTMLSelectElement).value) ?? ranges[0]);
  return h(
    'label',
    {},
    'Range ',
    h(
      'select',
      { id, onchange },
      ranges.map((r) => h('option', { value: r.id }, r.label)),
    ),
  );
}

export function statusBadge(status: string): HTMLElement {
  return h('span', { class: `badge ${status}` }, status);
}

export function percent(p: number | null | undefined): string {
  return p === null || p === undefined ? '—' : `${p.toFixed(p === 100 ? 0 : 2)}%`;
}

/** A wide table in a region the keyboard can scroll (narrow screens). */
export function scroller(label: string, table: HTMLElement): HTMLElement {
  return h('div', { class: 'scroll', role: 'region', 'aria-label': label, tabindex: 0 }, table);
}

/** A table: a header row of column names, then one row per item, of the cells given. */
export function table(attrs: Attrs, columns: readonly string[], rows: HTMLElement[][]): HTMLTableElement {
  return h(
    'table',
    attrs,
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((c) => h('th', { scope: 'col' }, c)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((cells) => h('tr', {}, cells)),
    ),
  );
}
