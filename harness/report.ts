/**
 * The one report writer: replaces a `<!-- NAME -->` … `<!-- /NAME -->` section of
 * BENCHMARKS.md or RELIABILITY.md (appending it when missing), Markdown table helpers,
 * number formatting, medians and percentiles.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './processes.js';
import type { Machine } from './run.js';

export const BENCHMARKS_MD = join(ROOT, 'BENCHMARKS.md');
export const RELIABILITY_MD = join(ROOT, 'RELIABILITY.md');

/** Replaces the part of `file` between `<!-- name -->` and `<!-- /name -->` (appended when missing). */
export function writeSection(file: string, name: string, body: string, title = '# Figures\n'): void {
  const section = `<!-- ${name} -->\n${body.trim()}\n<!-- /${name} -->`;
  const text = existsSync(file) ? readFileSync(file, 'utf8') : title;
  const re = new RegExp(`<!-- ${name} -->[\\s\\S]*<!-- /${name} -->`);
  writeFileSync(file, re.test(text) ? text.replace(re, () => section) : `${text.trimEnd()}\n\n${section}\n`);
}

/**
 * The first lines of a benchmark's section: its title, the command that reproduces it, the
 * date and the machine (`machineNote` after the machine's ClickHouse version).
 */
export function sectionHead(
  title: string,
  r: { command: string; date: string; machine: Machine },
  machineNote = '',
): string[] {
  const m = r.machine;
  return [
    `## ${title}`,
    '',
    `Command: \`${r.command}\``,
    '',
    `- Date: ${r.date}`,
    `- Machine: ${m.nproc} CPUs (${m.cpuModel}), ${fmt(m.memoryGiB, 1)} GiB memory, Node ${m.node}, ` +
      `Kafka ${m.kafka} (one KRaft broker), ClickHouse ${m.clickhouse}${machineNote}`,
  ];
}

/** A section's targets: how many were met, then their table. */
export function targetsPart(targets: readonly { met: unknown }[], met: number, tableText: string): string[] {
  return [`### Targets: ${met} of ${targets.length} met`, '', tableText, ''];
}

/** Markdown from lines, with runs of blank lines (left by empty optional parts) made one. */
export function markdown(lines: readonly string[]): string {
  return lines.filter((l, i, all) => !(l === '' && all[i - 1] === '')).join('\n');
}

/** A Markdown table; a column whose header starts with `>` is right-aligned (the `>` is dropped). */
export function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const head = header.map((h) => h.replace(/^>/, ''));
  const align = header.map((h) => (h.startsWith('>') ? '---:' : '---'));
  return [head, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

/** en-US number with `digits` decimals; '-' when not finite. */
export const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '-';

/** One decimal under 10, whole above; 'n/a' when not finite (latencies in ms). */
export const ms = (x: number): string => (Number.isFinite(x) ? (x < 10 ? x.toFixed(1) : fmt(x)) : 'n/a');

export const ratio = (x: number, digits = 2): string => (Number.isFinite(x) ? `${x.toFixed(digits)}x` : '-');

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export interface Quantiles {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  min: number;
  mean: number;
}

/** Nearest-rank percentiles (and min, max, mean) of the finite values; NaN when there are none. */
export function quantiles(values: ArrayLike<number>): Quantiles {
  const a = Float64Array.from(values)
    .filter((x) => Number.isFinite(x))
    .sort();
  const at = (q: number): number =>
    a.length ? a[Math.min(a.length - 1, Math.max(0, Math.ceil(q * a.length) - 1))]! : NaN;
  const mean = a.length ? a.reduce((x, y) => x + y, 0) / a.length : NaN;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1), min: a.length ? a[0]! : NaN, mean };
}
