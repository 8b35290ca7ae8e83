/**
 * A small SVG line chart of one curve of `npm run bench:scale` (docs/bench/<curve id>.svg),
 * written without a charting library: a handful of points per curve needs axes, ticks, a
 * legend and lines, not a layout engine, and the file stays diffable text.
 *
 * The charted series are grouped by unit, one panel per unit stacked on a shared x axis
 * (small multiples: events/s and MB never share a y axis); each panel has its own y axis,
 * its unit, tick values and a legend of its series. x is on a log scale when the points
 * span more than 10x (1, 100, 10,000 keys), linear otherwise; its ticks are the measured x
 * values. A value that is not finite leaves a gap in its line.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Curve, Series } from './curve.js';

const WIDTH = 720;
const LEFT = 84;
const RIGHT = 24;
const TITLE_HEIGHT = 36;
const PANEL_HEIGHT = 190;
/** Above each panel's plot: its unit and legend. */
const PANEL_HEAD = 30;
const PANEL_GAP = 18;
const BOTTOM = 56;
/** Colour-blind-safe (Okabe-Ito), in series order within a panel. */
const COLOURS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000'];

/** Text for an XML attribute or element. */
export function xmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** A short tick label: 950, 1,500, 12k, 1.5M, 0.25. */
export function tickLabel(v: number): string {
  const a = Math.abs(v);
  const trim = (x: number, unit: string): string => `${Number(x.toFixed(x < 10 ? 1 : 0))}${unit}`;
  if (a >= 1e6) return trim(v / 1e6, 'M');
  if (a >= 1e4) return trim(v / 1e3, 'k');
  if (a >= 1 || a === 0) return Number(v.toFixed(a < 10 ? 2 : 0)).toLocaleString('en-US');
  return String(Number(v.toPrecision(2)));
}

/** Labels of one axis's ticks, in one unit: 0, 2.5k, 5k, 7.5k, 10k rather than 7,500 beside 10k. */
export function axisLabels(ticks: readonly number[]): string[] {
  const top = Math.max(...ticks.map(Math.abs));
  const [div, suffix] = top >= 1e6 ? [1e6, 'M'] : top >= 1e4 ? [1e3, 'k'] : [1, ''];
  if (div === 1) return ticks.map(tickLabel);
  return ticks.map((t) => (t === 0 ? '0' : `${Number((t / div).toPrecision(3)).toLocaleString('en-US')}${suffix}`));
}

/** Round tick values from min(0, lo) to at least `hi`: steps of 1, 2, 2.5 or 5 x 10^k, about `count` of them. */
export function niceTicks(lo: number, hi: number, count = 4): number[] {
  const from = Math.min(0, lo);
  const span = hi - from;
  if (!(span > 0) || !Number.isFinite(span)) return [from, from + 1];
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw)!;
  const first = Math.floor(from / step) * step;
  const ticks: number[] = [];
  for (let v = first; v < hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks.at(-1)! < hi) ticks.push(Number((ticks.at(-1)! + step).toPrecision(12)));
  return ticks;
}

/** Maps x values into [x0, x1]: log10 when they span more than 10x (and are all positive), else linear. */
export function xScale(xs: readonly number[], x0: number, x1: number): { log: boolean; at: (x: number) => number } {
  const finite = xs.filter((x) => Number.isFinite(x));
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const log = lo > 0 && hi / lo > 10;
  const f = (x: number): number => (log ? Math.log10(x) : x);
  const [a, b] = [f(lo), f(hi)];
  // A little room at both ends, so that the first and last markers sit off the axes.
  const pad = (x1 - x0) * 0.06;
  return {
    log,
    at: (x) => (b === a ? (x0 + x1) / 2 : x0 + pad + ((f(x) - a) / (b - a)) * (x1 - x0 - 2 * pad)),
  };
}

/** The charted series grouped by unit, in the order their units first appear. */
export function panelsOf(curve: Curve): { unit: string; series: Series[] }[] {
  const panels: { unit: string; series: Series[] }[] = [];
  for (const s of curve.series) {
    if (s.chart === false) continue;
    const p = panels.find((x) => x.unit === s.unit);
    if (p) p.series.push(s);
    else panels.push({ unit: s.unit, series: [s] });
  }
  return panels;
}

const n2 = (v: number): string => String(Math.round(v * 10) / 10);

/** The curve's chart as an SVG document. */
export function curveSvg(curve: Curve): string {
  const panels = panelsOf(curve);
  const points = [...curve.points].sort((a, b) => a.x - b.x);
  const height = TITLE_HEIGHT + panels.length * (PANEL_HEAD + PANEL_HEIGHT + PANEL_GAP) + BOTTOM;
  const [x0, x1] = [LEFT, WIDTH - RIGHT];
  const xs = xScale(
    points.map((p) => p.x),
    x0,
    x1,
  );
  const out: string[] = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<title>${xmlEscape(curve.title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${xmlEscape(curve.title)}</text>`,
  ];
  if (panels.length === 0 || points.length === 0) {
    out.push(`<text x="${WIDTH / 2}" y="${height / 2}" text-anchor="middle">no charted figures</text>`, '</svg>');
    return `${out.join('\n')}\n`;
  }
  let top = TITLE_HEIGHT;
  panels.forEach((panel, pi) => {
    const y0 = top + PANEL_HEAD; // plot top
    const y1 = y0 + PANEL_HEIGHT; // plot bottom
    const values = panel.series.flatMap((s) => points.map((p) => p.values[s.key] ?? NaN)).filter(Number.isFinite);
    const ticks = niceTicks(values.length ? Math.min(...values) : 0, values.length ? Math.max(...values) : 1);
    const [lo, hi] = [ticks[0]!, ticks.at(-1)!];
    const yAt = (v: number): number => y1 - ((v - lo) / (hi - lo)) * (y1 - y0);
    out.push(`<g class="panel" data-unit="${xmlEscape(panel.unit)}">`);
    // Unit (the y axis's label) and the legend, above the plot.
    out.push(`<text x="${x0}" y="${top + 14}" font-weight="bold">${xmlEscape(panel.unit)}</text>`);
    let lx = x0 + 12 + Math.min(220, panel.unit.length * 7.5);
    panel.series.forEach((s, si) => {
      const colour = COLOURS[si % COLOURS.length]!;
      out.push(
        `<line x1="${n2(lx)}" y1="${top + 10}" x2="${n2(lx + 18)}" y2="${top + 10}" stroke="${colour}" stroke-width="2.5"/>`,
        `<circle cx="${n2(lx + 9)}" cy="${top + 10}" r="3" fill="${colour}"/>`,
        `<text x="${n2(lx + 24)}" y="${top + 14}">${xmlEscape(s.label)}</text>`,
      );
      lx += 40 + s.label.length * 6.6;
    });
    // Grid and y ticks.
    const labels = axisLabels(ticks);
    for (const [ti, t] of ticks.entries()) {
      const y = n2(yAt(t));
      out.push(
        `<line x1="${x0}" y1="${y}" x2="${x1}" y2="${y}" stroke="${t === 0 ? '#888888' : '#e3e3e3'}" stroke-width="1"/>`,
        `<text x="${x0 - 6}" y="${n2(yAt(t) + 4)}" text-anchor="end" fill="#333333">${xmlEscape(labels[ti]!)}</text>`,
      );
    }
    // x ticks at the measured x values; their labels under the last panel only.
    for (const p of points) {
      const x = n2(xs.at(p.x));
      out.push(`<line x1="${x}" y1="${y0}" x2="${x}" y2="${y1}" stroke="#f0f0f0" stroke-width="1"/>`);
      out.push(`<line x1="${x}" y1="${y1}" x2="${x}" y2="${y1 + 5}" stroke="#555555" stroke-width="1"/>`);
      if (pi === panels.length - 1)
        out.push(
          `<text x="${x}" y="${y1 + 19}" text-anchor="middle" fill="#333333">${xmlEscape(p.x.toLocaleString('en-US'))}</text>`,
        );
    }
    out.push(
      `<line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y1}" stroke="#555555" stroke-width="1"/>`,
      `<line x1="${x0}" y1="${y1}" x2="${x1}" y2="${y1}" stroke="#555555" stroke-width="1"/>`,
    );
    // One line per series, broken where a value is missing, and a marker per point.
    panel.series.forEach((s, si) => {
      const colour = COLOURS[si % COLOURS.length]!;
      const segments: string[][] = [[]];
      for (const p of points) {
        const v = p.values[s.key];
        if (v === undefined || !Number.isFinite(v)) {
          if (segments.at(-1)!.length) segments.push([]);
          continue;
        }
        segments.at(-1)!.push(`${n2(xs.at(p.x))},${n2(yAt(v))}`);
      }
      out.push(`<g class="series" data-key="${xmlEscape(s.key)}">`);
      for (const seg of segments)
        if (seg.length > 1)
          out.push(
            `<polyline points="${seg.join(' ')}" fill="none" stroke="${colour}" stroke-width="2.5" stroke-linejoin="round"/>`,
          );
      for (const p of points) {
        const v = p.values[s.key];
        if (v === undefined || !Number.isFinite(v)) continue;
        out.push(
          `<circle cx="${n2(xs.at(p.x))}" cy="${n2(yAt(v))}" r="4" fill="${colour}" data-x="${p.x}" data-value="${v}">` +
            `<title>${xmlEscape(`${s.label} at ${p.x.toLocaleString('en-US')}: ${v.toLocaleString('en-US')} ${s.unit}`)}</title></circle>`,
        );
      }
      out.push('</g>');
    });
    out.push('</g>');
    top = y1 + PANEL_GAP;
  });
  out.push(
    `<text x="${(x0 + x1) / 2}" y="${height - 14}" text-anchor="middle">${xmlEscape(
      `${curve.xLabel}${xs.log ? ' (log scale)' : ''}`,
    )}</text>`,
    '</svg>',
  );
  return `${out.join('\n')}\n`;
}

/** Writes each curve's chart as `dir`/<curve id>.svg; returns the files written. */
export function writeCurveSvgs(curves: readonly Curve[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return curves.map((c) => {
    if (!/^[a-z0-9][a-z0-9-]*$/.test(c.id)) throw new Error(`curve id ${c.id}: not a file name`);
    const file = join(dir, `${c.id}.svg`);
    writeFileSync(file, curveSvg(c));
    return file;
  });
}
