import type { Monitor } from '@telemetry/contract';
import { h, loadView, percent, scroller, show, statusBadge, time } from './dom.js';
import { silenceMark } from './monitor-alerting.js';
import { allMonitors, pool, uptimes } from './monitor-data.js';
import { guard, roleNote } from './guard.js';

type SortKey = 'name' | 'status' | 'last_check_at' | 'u24' | 'u7' | 'u30';
interface Row {
  m: Monitor;
  u24?: number | null;
  u7?: number | null;
  u30?: number | null;
}

/** The monitor list: status, last check and uptime, sortable and filterable. */
export async function monitorList(main: HTMLElement): Promise<void> {
  const monitors = await loadView(main, 'Monitors', 'Loading monitors…', allMonitors, () => void monitorList(main));
  if (!monitors) return;
  const rows: Row[] = monitors.map((m) => ({ m }));
  let sort: SortKey = 'name';
  let ascending = true;
  let filter = '';
  let statusFilter = '';
  const body = h('tbody');
  const count = h('p', { class: 'muted', role: 'status' });
  const headers = new Map<SortKey, HTMLElement>();
  const valueOf = (r: Row, k: SortKey): string | number => {
    if (k === 'name') return r.m.name.toLowerCase();
    if (k === 'status') return r.m.status;
    if (k === 'last_check_at') return r.m.last_check_at ?? '';
    return r[k] ?? -1;
  };
  const render = (): void => {
    const shown = rows
      .filter(
        (r) =>
          (filter === '' || r.m.name.toLowerCase().includes(filter)) &&
          (statusFilter === '' || r.m.status === statusFilter),
      )
      .sort((a, b) => {
        const x = valueOf(a, sort);
        const y = valueOf(b, sort);
        return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
      });
    for (const [k, th] of headers)
      th.setAttribute('aria-sort', k === sort ? (ascending ? 'ascending' : 'descending') : 'none');
    show(
      body,
      shown.map((r) =>
        h(
          'tr',
          { 'data-monitor': r.m.id },
          h('th', { scope: 'row' }, h('a', { href: `#/monitors/${r.m.id}` }, r.m.name)),
          h('td', {}, statusBadge(r.m.status), silenceMark(r.m)),
          h('td', {}, time(r.m.last_check_at)),
          ...(['u24', 'u7', 'u30'] as const).map((k) =>
            h('td', { class: 'num' }, r[k] === undefined ? '…' : percent(r[k])),
          ),
        ),
      ),
    );
    count.textContent = `${shown.length} of ${rows.length} monitors`;
  };
  const th = (label: string, k: SortKey): HTMLElement => {
    const cell = h(
      'th',
      { scope: 'col', 'aria-sort': 'none' },
      h(
        'button',
        {
          type: 'button',
          class: 'sort',
          onclick: () => {
            ascending = sort === k ? !ascending : true;
            sort = k;
            render();
          },
        },
        label,
      ),
    );
    headers.set(k, cell);
    return cell;
  };
  show(
    main,
    h(
      'div',
      { class: 'title-row' },
      h('h1', {}, 'Monitors'),
      guard(
        'monitors:write',
        h('a', { class: 'button primary', id: 'new-monitor', href: '#/monitors/new' }, 'New monitor'),
      ),
    ),
    roleNote('monitors:write'),
    h(
      'div',
      { class: 'filters' },
      h(
        'label',
        {},
        'Filter by name ',
        h('input', {
          type: 'search',
          id: 'filter',
          oninput: (e: Event) => {
            filter = (e.target as HTMLInputElement).value.trim().toLowerCase();
            render();
          },
        }),
      ),
      h(
        'label',
        {},
        'Status ',
        h(
          'select',
          {
            id: 'status-filter',
            onchange: (e: Event) => {
              statusFilter = (e.target as HTMLSelectElement).value;
              render();
            },
          },
          h('option', { value: '' }, 'any'),
          ['up', 'down', 'pending', 'paused'].map((s) => h('option', { value: s }, s)),
        ),
      ),
    ),
    count,
    rows.length === 0
      ? h('p', { class: 'empty' }, 'No monitors yet. ', h('a', { href: '#/monitors/new' }, 'Create the first one'), '.')
      : scroller(
          'Monitors',
          h(
            'table',
            {},
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                th('Name', 'name'),
                th('Status', 'status'),
                th('Last check', 'last_check_at'),
                th('Uptime 24 h', 'u24'),
                th('7 d', 'u7'),
                th('30 d', 'u30'),
              ),
            ),
            body,
          ),
        ),
  );
  render();
  await pool(rows, 4, async (r) => {
    try {
      [r.u24, r.u7, r.u30] = await uptimes(r.m.id);
    } catch {
      [r.u24, r.u7, r.u30] = [null, null, null];
    }
    render();
  });
}
