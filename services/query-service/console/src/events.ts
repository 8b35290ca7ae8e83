import { get } from './api.js';
import { lineChart } from './chart.js';
import { failure, h, loading, rangePicker, scroller, show, table } from './dom.js';

interface PerMinute {
  from: string;
  to: string;
  truncated: boolean;
  minutes: { minute: string; source: string; category: string; events: number }[];
}

const RANGES = [
  { id: '1h', label: 'Last hour', seconds: 3600 },
  { id: '6h', label: 'Last 6 hours', seconds: 6 * 3600 },
  { id: '24h', label: 'Last 24 hours', seconds: 24 * 3600 },
] as const;

/** How many sources get a line of their own; the rest are summed as "other". */
const MAX_LINES = 5;
const COLORS = ['--series-1', '--series-2', '--series-3', '--series-4', '--series-5', '--series-6'];

/** Events per minute by source (chart) and by source and category (table), from the rollup. */
export async function eventsOverview(main: HTMLElement): Promise<void> {
  let range: (typeof RANGES)[number] = RANGES[0];
  const body = h('div');
  const draw = async (): Promise<void> => {
    show(body, loading('Loading events…'));
    let data: PerMinute;
    try {
      const from = new Date(Date.now() - range.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      data = await get<PerMinute>(`/api/events/per-minute?from=${from}`);
    } catch (err) {
      show(
        body,
        failure(err, () => void draw()),
      );
      return;
    }
    const bySource = new Map<string, number>();
    const byPair = new Map<string, number>();
    for (const r of data.minutes) {
      bySource.set(r.source, (bySource.get(r.source) ?? 0) + r.events);
      const k = `${r.source}\u0000${r.category}`;
      byPair.set(k, (byPair.get(k) ?? 0) + r.events);
    }
    const top = [...bySource.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, MAX_LINES)
      .map(([s]) => s);
    const lines = bySource.size > top.length ? [...top, 'other'] : top;
    const start = Date.parse(data.from) / 1000;
    const end = Date.parse(data.to) / 1000;
    const xs: number[] = [];
    for (let t = start; t < end; t += 60) xs.push(t);
    const index = new Map(xs.map((t, i) => [t, i]));
    const values = lines.map(() => xs.map(() => 0));
    for (const r of data.minutes) {
      const line = top.includes(r.source) ? lines.indexOf(r.source) : lines.length - 1;
      const i = index.get(Date.parse(r.minute) / 1000);
      if (i !== undefined) values[line]![i]! += r.events;
    }
    const total = [...bySource.values()].reduce((a, b) => a + b, 0);
    show(
      body,
      h(
        'p',
        { role: 'status' },
        `${total.toLocaleString()} events from ${bySource.size} sources, ${range.label.toLowerCase()}.`,
        data.truncated ? ' Too many sources and categories to show them all: choose a shorter range.' : '',
      ),
      lineChart(
        'Events per minute by source',
        'ev',
        xs,
        lines.map((l, i) => ({ label: l, values: values[i]!, color: COLORS[i % COLORS.length]! })),
        [start, end],
      ),
      h('h2', {}, 'By source and category'),
      byPair.size === 0
        ? h('p', { class: 'empty' }, 'No events in this range.')
        : scroller(
            'Events by source and category',
            table(
              {},
              ['Source', 'Category', 'Events'],
              [...byPair.entries()]
                .sort((a, b) => b[1] - a[1])
                .map(([k, n]) => {
                  const [source, category] = k.split('\u0000');
                  return [h('td', {}, source), h('td', {}, category), h('td', { class: 'num' }, n.toLocaleString())];
                }),
            ),
          ),
    );
  };
  show(
    main,
    h('h1', {}, 'Events'),
    rangePicker('events-range', RANGES, (r) => {
      range = r;
      void draw();
    }),
    body,
  );
  await draw();
}
