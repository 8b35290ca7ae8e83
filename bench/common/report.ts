/**
 * What the benchmarks' reports repeat on top of harness/report.ts: the head every report
 * starts with (the command that reproduces it, the date, the machine), the closing parts
 * of a section (its reading, then its caveats), a gauge read from a service's Prometheus
 * text, and the sum of two records of counts (failed requests by kind).
 */
import type { Machine } from '../../harness/run.js';

/** The first fields of every benchmark's report (Benchmark.head). */
export interface ReportHead<M extends Machine = Machine> {
  command: string;
  date: string;
  machine: M;
}

/** A section's last parts: "Reading" (one bullet each) and "Caveats" (lines as written). */
export function readingAndCaveats(reading: readonly string[], caveats: readonly string[]): string[] {
  return ['### Reading', '', ...reading.map((x) => `- ${x}`), '', '### Caveats', '', ...caveats];
}

/** The value of a gauge's first sample in a Prometheus text page; NaN when absent. */
export function gauge(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

/** Two records of counts added field by field (the fields of `a`, in its order). */
export function addCounts<T extends { [K in keyof T]: number }>(a: T, b: T): T {
  const sum = { ...a };
  for (const k of Object.keys(a) as (keyof T)[]) sum[k] = (a[k] + b[k]) as T[keyof T];
  return sum;
}
