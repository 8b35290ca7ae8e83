import { h } from './dom.js';

export interface Series {
  label: string;
  values: (number | null)[];
  /** A CSS custom property holding its colour. */
  color: string;
}

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

/**
 * A line chart (uPlot) over unix-second `xs` spanning `span`, sized to its container. The figure says how
 * many points it holds (`data-points`) and has a text summary for screen readers.
 */
export function lineChart(
  title: string,
  unit: string,
  xs: number[],
  series: Series[],
  span: [number, number],
): HTMLElement {
  const points = series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);
  const box = h('div', { class: 'chart-box' });
  const figure = h(
    'figure',
    { class: 'chart', 'data-points': points },
    h('figcaption', {}, title),
    points === 0 ? h('p', { class: 'empty' }, 'No data in this range yet.') : box,
  );
  if (points === 0) return figure;
  const draw = (): void => {
    const width = Math.max(280, box.clientWidth || 600);
    box.replaceChildren();
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid') }, ticks: { stroke: cssVar('--grid') } };
    new uPlot(
      {
        width,
        height: 240,
        // The whole chosen range, even when only a few points are in it yet.
        scales: { x: { time: true, range: (): uPlot.Range.MinMax => span } },
        series: [
          {},
          ...series.map((s) => ({
            label: s.label,
            stroke: cssVar(s.color),
            width: 2,
            spanGaps: false,
            points: { show: xs.length < 60 },
            value: (_u: uPlot, v: number | null) => (v === null ? '—' : `${v.toFixed(1)} ${unit}`),
          })),
        ],
        axes: [axis, { ...axis, values: (_u: uPlot, vals: number[]) => vals.map((v) => `${v} ${unit}`) }],
      },
      [xs, ...series.map((s) => s.values)] as uPlot.AlignedData,
      box,
    );
  };
  // Drawn once the figure is in the page (its width is known), and again when that changes.
  requestAnimationFrame(draw);
  let last = 0;
  new ResizeObserver(() => {
    if (Math.abs(box.clientWidth - last) > 20) {
      last = box.clientWidth;
      draw();
    }
  }).observe(box);
  const summary = series
    .map((s) => {
      const vs = s.values.filter((v): v is number => v !== null);
      return `${s.label}: ${vs.length} points, latest ${vs.length ? vs[vs.length - 1]!.toFixed(1) : '—'} ${unit}`;
    })
    .join('; ');
  figure.append(h('p', { class: 'sr-only' }, summary));
  return figure;
}

/** Quantile `q` (0-1) of sorted `values`. */
export function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}
