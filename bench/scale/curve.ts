/**
 * `npm run bench:scale`: how cost grows. Each part (gateway.ts, consumer.ts, query.ts,
 * runner.ts) measures one curve, a few points along one axis (access keys, consumer
 * processes, monitors), and returns it in this shape; main.ts runs the parts one after the
 * other on one stack, writes each curve as a table in BENCHMARKS.md and as an SVG chart
 * (svg.ts) beside it, and prints every curve in its last-line JSON.
 */
import type { Machine, BenchStack, Cleanups } from '../../harness/run.js';

/** One measured quantity of a curve, e.g. `{ key: 'eps', label: 'events/s', unit: 'events/s' }`. */
export interface Series {
  key: string;
  label: string;
  unit: string;
  /** Drawn in the chart (a curve may carry figures that are only tabled). Default true. */
  chart?: boolean;
}

/** One point: the x value (keys, processes, monitors) and a value per series key. */
export interface CurvePoint {
  x: number;
  values: Record<string, number>;
  /** Per point remarks, e.g. "2 of 2 runs disturbed". */
  note?: string;
}

export interface Curve {
  /** Stable id, also the SVG's file name: `gateway-keys`, `consumer-processes`, `query-monitors`, `runner-monitors`. */
  id: string;
  title: string;
  /** The x axis, e.g. "access keys", plotted on a log scale when the points span more than 10x. */
  xLabel: string;
  series: Series[];
  points: CurvePoint[];
  /** How it was measured (load, durations, settings) and how to read it: Markdown lines. */
  notes: string[];
  /** The CPU the rest of the machine used during the curve (% of one core, max), for the noise caveat. */
  otherCpuPercent?: number;
}

/** What every part gets from main.ts. */
export interface ScaleContext {
  bench: BenchStack;
  machine: Machine;
  cleanups: Cleanups;
  log: (line: string) => void;
  /** Smoke mode (`--smoke`): tiny counts, seconds, same code path. */
  smoke: boolean;
  /** A directory for this run's logs and files. */
  logDir: string;
}

/** A part of bench:scale. */
export type CurvePart = (ctx: ScaleContext) => Promise<Curve>;
