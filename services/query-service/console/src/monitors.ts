import type { Check, Incident, Monitor, WebhookDelivery } from '@telemetry/contract';
import { ApiError, call, get } from './api.js';
import { lineChart, quantile } from './chart.js';
import { failure, h, loading, percent, scroller, show, statusBadge, time } from './dom.js';

interface Stats {
  checks: number;
  up: number;
  degraded: number;
  down: number;
  uptime_percent: number | null;
  response_time: { p50: number; p95: number; p99: number } | null;
}
interface Summary {
  total: Stats;
  intervals: (Stats & { start: string })[];
}

const HOUR = 3600;
const DAY = 24 * HOUR;

function isoAgo(seconds: number): string {
  return new Date(Date.now() - seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Every monitor of the key, following next_cursor. */
async function allMonitors(): Promise<Monitor[]> {
  const out: Monitor[] = [];
  let cursor: string | null | undefined = undefined;
  do {
    const page: { data: Monitor[]; next_cursor?: string | null } = await call<Monitor[]>(
      'GET',
      `/api/monitors?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    out.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

/** Uptime over the last 24 h, 7 d and 30 d from one hourly summary of 30 days. */
async function uptimes(id: string): Promise<[number | null, number | null, number | null]> {
  const s = await get<Summary>(`/api/monitors/${id}/checks/summary?interval=hour&from=${isoAgo(30 * DAY)}`);
  const now = Date.now() / 1000;
  const over = (seconds: number): number | null => {
    let good = 0;
    let all = 0;
    for (const b of s.intervals) {
      if (Date.parse(b.start) / 1000 + HOUR <= now - seconds) continue;
      good += b.up + b.degraded;
      all += b.checks;
    }
    return all === 0 ? null : (good / all) * 100;
  };
  return [over(DAY), over(7 * DAY), over(30 * DAY)];
}

/** Runs `fn` over `items`, at most `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(n, queue.length) }, async () => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) await fn(t);
    }),
  );
}

type SortKey = 'name' | 'status' | 'last_check_at' | 'u24' | 'u7' | 'u30';
interface Row {
  m: Monitor;
  u24?: number | null;
  u7?: number | null;
  u30?: number | null;
}

/** The monitor list: status, last check and uptime, sortable and filterable. */
export async function monitorList(main: HTMLElement): Promise<void> {
  show(main, h('h1', {}, 'Monitors'), loading('Loading monitors…'));
  let rows: Row[];
  try {
    rows = (await allMonitors()).map((m) => ({ m }));
  } catch (err) {
    show(
      main,
      h('h1', {}, 'Monitors'),
      failure(err, () => void monitorList(main)),
    );
    return;
  }
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
          h('td', {}, statusBadge(r.m.status)),
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
      h('a', { class: 'button primary', href: '#/monitors/new' }, 'New monitor'),
    ),
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

const RANGES = [
  { id: '1h', label: 'Last hour', seconds: HOUR },
  { id: '24h', label: 'Last 24 hours', seconds: DAY },
  { id: '7d', label: 'Last 7 days', seconds: 7 * DAY },
  { id: '30d', label: 'Last 30 days', seconds: 30 * DAY },
  { id: '90d', label: 'Last 90 days', seconds: 90 * DAY },
] as const;

interface Bucket {
  t: number;
  p50: number | null;
  p95: number | null;
  checks: number;
  down: number;
}

/** The last hour, per minute, from the checks themselves (quantiles computed here). */
async function minuteBuckets(id: string): Promise<Bucket[]> {
  const checks = await get<Check[]>(`/api/monitors/${id}/checks?order=asc&limit=1000&from=${isoAgo(HOUR)}`);
  const byMinute = new Map<number, Check[]>();
  for (const c of checks) {
    const t = Math.floor(Date.parse(c.created_at) / 60_000) * 60;
    byMinute.set(t, [...(byMinute.get(t) ?? []), c]);
  }
  return [...byMinute.entries()]
    .sort(([a], [b]) => a - b)
    .map(([t, cs]) => {
      const times = cs.map((c) => c.response_time).sort((a, b) => a - b);
      return {
        t,
        p50: quantile(times, 0.5),
        p95: quantile(times, 0.95),
        checks: cs.length,
        down: cs.filter((c) => c.status === 'down').length,
      };
    });
}

/** Longer ranges, per hour or day, from the summary (quantiles from the rollup). */
async function summaryBuckets(id: string, seconds: number): Promise<Bucket[]> {
  const interval = seconds <= 7 * DAY ? 'hour' : 'day';
  const s = await get<Summary>(`/api/monitors/${id}/checks/summary?interval=${interval}&from=${isoAgo(seconds)}`);
  return s.intervals.map((b) => ({
    t: Date.parse(b.start) / 1000,
    p50: b.response_time?.p50 ?? null,
    p95: b.response_time?.p95 ?? null,
    checks: b.checks,
    down: b.down,
  }));
}

function statusBars(buckets: Bucket[], unit: string): HTMLElement {
  const down = buckets.filter((b) => b.down > 0).length;
  return h(
    'ol',
    { class: 'bars', 'aria-label': `${buckets.length} ${unit}s with checks, ${down} with failures` },
    buckets.map((b) => {
      const cls = b.down === 0 ? 'up' : b.down === b.checks ? 'down' : 'partial';
      const when = new Date(b.t * 1000).toISOString().replace('.000Z', 'Z');
      return h('li', { class: cls, title: `${when}: ${b.checks} checks, ${b.down} down` });
    }),
  );
}

function incidentList(incidents: Incident[]): HTMLElement {
  if (incidents.length === 0) return h('p', { class: 'empty' }, 'No incidents.');
  return h(
    'ol',
    { class: 'timeline' },
    incidents.map((i) =>
      h(
        'li',
        { class: `incident ${i.status}`, 'data-incident': i.id },
        h('span', { class: `badge ${i.status === 'open' ? 'down' : 'up'}` }, i.status === 'open' ? 'open' : 'resolved'),
        ' Down since ',
        time(i.started_at),
        i.resolved_at ? [' until ', time(i.resolved_at)] : null,
        ` (${formatDuration(i.duration_seconds)}). Cause: `,
        [i.cause.status_code ? `HTTP ${i.cause.status_code}` : '', i.cause.error ?? ''].filter((c) => c).join(', ') ||
          'unknown',
        i.maintenance ? ' In a maintenance window: nobody was paged.' : '',
      ),
    ),
  );
}

function formatDuration(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function checkTable(checks: Check[]): HTMLElement {
  if (checks.length === 0) return h('p', { class: 'empty' }, 'No checks yet.');
  return scroller(
    'Recent checks',
    h(
      'table',
      { id: 'checks' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Time', 'Status', 'Response', 'HTTP', 'Error'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        checks.map((c) =>
          h(
            'tr',
            {},
            h('td', {}, time(c.created_at)),
            h('td', {}, statusBadge(c.status)),
            h('td', { class: 'num' }, `${c.response_time.toFixed(1)} ms`),
            h('td', { class: 'num' }, c.status_code || '—'),
            h('td', {}, c.error ?? ''),
          ),
        ),
      ),
    ),
  );
}

function deliveryTable(deliveries: WebhookDelivery[]): HTMLElement {
  if (deliveries.length === 0) return h('p', { class: 'empty' }, 'No webhook deliveries.');
  return scroller(
    'Webhook deliveries',
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Time', 'Alert', 'URL', 'Attempt', 'Result'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h(
        'tbody',
        {},
        deliveries.map((d) =>
          h(
            'tr',
            {},
            h('td', {}, time(d.attempted_at.replace(/\.\d{3}Z$/, 'Z'))),
            h('td', {}, d.alert_type),
            h('td', { class: 'url' }, d.url),
            h('td', { class: 'num' }, d.attempt),
            h('td', {}, d.status, d.status_code ? ` (HTTP ${d.status_code})` : '', d.error ? ` ${d.error}` : ''),
          ),
        ),
      ),
    ),
  );
}

/** A monitor's page; refreshes itself every few seconds while shown. */
export async function monitorPage(
  main: HTMLElement,
  id: string,
  navigate: (hash: string) => void,
): Promise<() => void> {
  show(main, loading('Loading the monitor…'));
  let range: (typeof RANGES)[number] = RANGES[0];
  let stopped = false;
  const sections = {
    head: h('div'),
    chart: h('section', { 'aria-labelledby': 'h-chart' }),
    incidents: h('section', { 'aria-labelledby': 'h-incidents' }),
    checks: h('section', { 'aria-labelledby': 'h-checks' }),
    deliveries: h('section', { 'aria-labelledby': 'h-deliveries' }),
  };
  const notice = h('div', { role: 'status', class: 'notice' });
  // The range picker stays while the chart under it is redrawn (keyboard focus stays on it).
  const chartBody = h('div');
  show(
    sections.chart,
    h('h2', { id: 'h-chart' }, 'Response time'),
    h(
      'label',
      {},
      'Range ',
      h(
        'select',
        {
          id: 'range',
          onchange: (e: Event) => {
            range = RANGES.find((r) => r.id === (e.target as HTMLSelectElement).value) ?? RANGES[0];
            show(chartBody, loading());
            void refresh();
          },
        },
        RANGES.map((r) => h('option', { value: r.id }, r.label)),
      ),
    ),
    chartBody,
  );
  let monitor: Monitor | undefined;

  const act = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
    show(notice, `${what}…`);
    try {
      await fn();
      show(notice, `${what}: done.`);
      await refresh();
    } catch (err) {
      show(notice, failure(err));
    }
  };
  const head = (m: Monitor): HTMLElement =>
    h(
      'div',
      { class: 'title-row' },
      h('h1', {}, m.name, ' ', statusBadge(m.status)),
      h(
        'div',
        { class: 'actions' },
        h('a', { class: 'button', href: `#/monitors/${m.id}/edit` }, 'Edit'),
        h(
          'button',
          {
            type: 'button',
            onclick: () =>
              void act(m.paused ? 'Resuming' : 'Pausing', () =>
                call('PATCH', `/api/monitors/${m.id}`, { paused: !m.paused }),
              ),
          },
          m.paused ? 'Resume' : 'Pause',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            onclick: () => {
              if (!confirm(`Delete the monitor “${m.name}”? Its checks stop and its history is no longer shown.`))
                return;
              void act('Deleting', async () => {
                await call('DELETE', `/api/monitors/${m.id}`);
                stopped = true;
                navigate('#/');
              });
            },
          },
          'Delete',
        ),
      ),
    );

  const refresh = async (): Promise<void> => {
    if (stopped) return;
    try {
      const [m, buckets, incidents, checks, deliveries] = await Promise.all([
        get<Monitor>(`/api/monitors/${id}`),
        range.id === '1h' ? minuteBuckets(id) : summaryBuckets(id, range.seconds),
        get<Incident[]>(`/api/monitors/${id}/incidents?limit=20`),
        get<Check[]>(`/api/monitors/${id}/checks?limit=20`),
        get<WebhookDelivery[]>(`/api/monitors/${id}/webhook-deliveries?limit=20`),
      ]);
      if (stopped) return;
      monitor = m;
      show(
        sections.head,
        head(m),
        h(
          'p',
          { class: 'muted url' },
          m.type === 'heartbeat'
            ? `a call expected every ${m.interval_seconds} s (+ ${m.heartbeat_grace_seconds ?? 60} s grace) · last check `
            : `${m.type === 'http' ? `${m.method} ` : ''}${m.url} every ${m.interval_seconds} s from ${m.locations.join(', ')} · last check `,
          time(m.last_check_at),
        ),
        m.heartbeat_token
          ? h(
              'p',
              { class: 'muted url' },
              'Your job calls POST /api/heartbeats/',
              h('code', { class: 'heartbeat-token' }, m.heartbeat_token),
              ' on the ingest gateway',
            )
          : null,
      );
      const unit = range.id === '1h' ? 'minute' : range.seconds <= 7 * DAY ? 'hour' : 'day';
      show(
        chartBody,
        lineChart(
          `p50 and p95 per ${unit}, ${range.label.toLowerCase()}`,
          'ms',
          buckets.map((b) => b.t),
          [
            { label: 'p50', values: buckets.map((b) => b.p50), color: '--series-1' },
            { label: 'p95', values: buckets.map((b) => b.p95), color: '--series-2' },
          ],
          [Math.floor(Date.now() / 1000) - range.seconds, Math.floor(Date.now() / 1000)],
        ),
        h('h3', {}, `Status per ${unit}`),
        buckets.length ? statusBars(buckets, unit) : h('p', { class: 'empty' }, 'No checks in this range yet.'),
      );
      show(sections.incidents, h('h2', { id: 'h-incidents' }, 'Incidents'), incidentList(incidents));
      show(sections.checks, h('h2', { id: 'h-checks' }, 'Recent checks'), checkTable(checks));
      show(sections.deliveries, h('h2', { id: 'h-deliveries' }, 'Webhook deliveries'), deliveryTable(deliveries));
      if (!main.contains(sections.head)) {
        show(
          main,
          h('p', {}, h('a', { href: '#/' }, '← All monitors')),
          sections.head,
          notice,
          ...Object.values(sections).slice(1),
        );
      }
    } catch (err) {
      if (stopped) return;
      if (err instanceof ApiError && err.code === 'MONITOR_NOT_FOUND') {
        show(
          main,
          h('h1', {}, 'No such monitor'),
          h('p', {}, 'It was deleted, or never existed. ', h('a', { href: '#/' }, 'All monitors')),
        );
        stopped = true;
        return;
      }
      // Keep what is shown; say that it is stale.
      show(
        notice,
        failure(err, () => void refresh()),
      );
      if (!monitor)
        show(
          main,
          failure(err, () => void refresh()),
        );
    }
  };
  await refresh();
  const timer = setInterval(() => void refresh(), 3000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
