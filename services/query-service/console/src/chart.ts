import { h } from './dom.js';

export interface Series {
  label: string;
  values: (number | null)[];
  /** A CSS custom property holding its colour. */
  color: string;
}

/** The axes' font, tick length and gap (uPlot's defaults, set here so the y-axis can be sized from them). */
const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const TICK_SIZE = 10;
const AXIS_GAP = 5;

let measurer: CanvasRenderingContext2D | null = null;

/**
 * The y-axis width its longest label needs (CSS px). uPlot's default is a fixed 50 px, which
 * cut "3.5 ms" to ".5 ms" and "12.5 ev" to "2.5 ev". Measured on a canvas of its own: uPlot
 * caches the font it set on its context, and changing that font would change its labels.
 */
function yAxisSize(values: string[] | null): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer || !values?.length) return 50;
  measurer.font = AXIS_FONT;
  const widest = Math.max(...values.map((v) => measurer!.measureText(v).width));
  // A few pixels more, so that no glyph touches the canvas edge.
  return Math.ceil(widest + TICK_SIZE + AXIS_GAP + 4);
}

/** The widest time labels uPlot's x-axis draws (seconds, minutes, days, years). */
const X_LABEL_SAMPLES = ['12:00:00pm', '12:00pm', '12/31', 'Sep 30', '2026'];

/**
 * Room right of the plot for half of the widest x label: uPlot centres each label on its
 * tick, so a tick at the right edge drew "11:30pm" past the canvas.
 */
function rightPadding(): number {
  measurer ??= document.createElement('canvas').getContext('2d');
  if (!measurer) return 32;
  measurer.font = AXIS_FONT;
  const widest = Math.max(...X_LABEL_SAMPLES.map((v) => measurer!.measureText(v).width));
  return Math.ceil(widest / 2) + 4;
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
    const axis = {
      stroke: cssVar('--muted'),
      font: AXIS_FONT,
      gap: AXIS_GAP,
      grid: { stroke: cssVar('--grid') },
      ticks: { stroke: cssVar('--grid'), size: TICK_SIZE },
    };
    // Sized from its labels; uPlot asks again while the ticks settle, and takes the last answer.
    let ySize = 50;
    new uPlot(
      {
        width,
        height: 240,
        padding: [null, rightPadding(), null, null],
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
        axes: [
          axis,
          {
            ...axis,
            values: (_u: uPlot, vals: number[]) => vals.map((v) => `${v} ${unit}`),
            // NOTE: after two passes the size only grows: a narrower one could flip forever with
            // the ticks it changes, and one kept as it was cut labels that came later ("3.25 ms"
            // after "3.5 ms" was measured).
            size: (_u: uPlot, values: string[] | null, _i: number, cycle: number) =>
              (ySize = cycle > 1 ? Math.max(ySize, yAxisSize(values)) : yAxisSize(values)),
          },
        ],
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
