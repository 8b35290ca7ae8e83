/**
 * The report of `npm run bench:scale`: each curve as a Markdown table (one row per point, a
 * column per series), its chart's link and notes, the targets (every part measured with its
 * checks passed; every request answered where a curve counts failed requests), and the
 * tables printed on stdout.
 */
import { fmt, markdown, sectionHead, table, targetsPart } from '../../harness/report.js';
import { DISTURBED_CPU } from '../../harness/sampler.js';
import { readingAndCaveats, type ReportHead } from '../common/report.js';
import type { Curve } from './curve.js';

export interface Target {
  name: string;
  goal: string;
  value: string;
  met: boolean;
}

export interface ScaleReport extends ReportHead {
  parts: string[];
  /** Seconds each part took. */
  partSeconds: Record<string, number>;
  curves: Curve[];
  failures: { part: string; error: string }[];
  /** The charts written (none in smoke mode or with BENCH_WRITE=0), relative to the repository. */
  charts: string[];
  targets: Target[];
}

/** A table cell: whole above 100, one decimal above 10, two below; '-' when not finite. */
export function cell(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '-';
  const a = Math.abs(v);
  if (Number.isInteger(v) || a >= 100) return fmt(v);
  return fmt(v, a >= 10 ? 1 : 2);
}

/** A curve as a Markdown table: one row per point, one column per series (charted or not). */
export function curveTable(c: Curve): string {
  const notes = c.points.some((p) => p.note !== undefined);
  const header = [
    c.xLabel,
    ...c.series.map((s) => (s.label.includes(s.unit) ? `>${s.label}` : `>${s.label} (${s.unit})`)),
    ...(notes ? ['note'] : []),
  ];
  const rows = [...c.points]
    .sort((a, b) => a.x - b.x)
    .map((p) => [
      fmt(p.x),
      ...c.series.map((s) => cell(p.values[s.key])),
      ...(notes ? [p.note === undefined ? '' : `**${p.note}**`] : []),
    ]);
  return table(header, rows);
}

/** The targets: every part measured with its checks passed, and every request answered where a curve counts failures. */
export function judge(
  parts: string[],
  curves: Curve[],
  failures: ScaleReport['failures'],
  seconds: Record<string, number>,
): Target[] {
  const targets: Target[] = parts.map((part) => {
    const failed = failures.find((f) => f.part === part);
    return {
      name: `${part}: curve measured, its checks passed (every event stored, every process up)`,
      goal: 'completes',
      value: failed
        ? `failed: ${failed.error.split('\n')[0]!.slice(0, 300)}`
        : `yes, in ${fmt(seconds[part] ?? NaN)} s`,
      met: failed === undefined,
    };
  });
  for (const c of curves) {
    if (!c.series.some((s) => s.key === 'failed')) continue;
    const failed = c.points.reduce((a, p) => a + (p.values.failed ?? 0), 0);
    targets.push({
      name: `${c.id}: every request answered 200 with the expected body`,
      goal: '0 failed',
      value: `${fmt(failed)} failed`,
      met: failed === 0,
    });
  }
  return targets;
}

export function renderSection(r: ScaleReport): string {
  const lines = [
    ...sectionHead('How cost grows: curves along keys, processes and monitors', r),
    `- Parts: ${r.parts.map((p) => `${p} (${fmt(r.partSeconds[p] ?? NaN)} s)`).join(', ')}, one after the other on one stack`,
    '',
    'Each curve is a table (every figure measured; the charted ones also in its chart, written by the same ' +
      'command as `docs/bench/<curve>.svg`: x on a log scale when the points span more than 10x, one panel per ' +
      'unit), then how it was measured. "Other CPU" is what processes outside the benchmark used meanwhile ' +
      `(more than ${DISTURBED_CPU}% of a core marks a point as disturbed).`,
    '',
  ];
  for (const c of r.curves) {
    lines.push(`### ${c.title}`, '', curveTable(c), '');
    lines.push(`![${c.title}](docs/bench/${c.id}.svg)`, '');
    lines.push(...c.notes.map((n) => `- ${n}`), '');
    if (c.otherCpuPercent !== undefined) {
      const noisy = c.otherCpuPercent > DISTURBED_CPU;
      const text = `Processes outside the benchmark used up to ${fmt(c.otherCpuPercent)}% of a core during this curve.`;
      lines.push(noisy ? `**${text}**` : text, '');
    }
  }
  for (const f of r.failures) lines.push(`**${f.part}: not measured**: ${f.error.split('\n')[0]}`, '');
  const met = r.targets.filter((t) => t.met).length;
  lines.push(
    ...targetsPart(
      r.targets,
      met,
      table(
        ['target', 'goal', 'measured', 'met'],
        r.targets.map((t) => [t.name, t.goal, t.value, t.met ? 'yes' : '**no**']),
      ),
    ),
    ...readingAndCaveats(
      [
        'A curve shows what one more key, process or monitor costs on this machine, measured the same way at ' +
          'every point; compare the points of a curve with each other, not with other sections.',
        'A flat line is the finding where the design promises it (a key lookup is a hash map read); a slope ' +
          'says where the next limit is.',
      ],
      [
        'Two cores shared by the services, Kafka, ClickHouse, PostgreSQL and the load generator: a point that ' +
          'adds processes (two consumers) competes with ClickHouse and Kafka for the same cores, so the curve ' +
          'shows what scaling out gives on one machine, not on many.',
      ],
    ),
  );
  return markdown(lines);
}

export function tables(r: ScaleReport): string {
  const parts = r.curves.map((c) => `${c.title}\n\n${curveTable(c)}`);
  const failures = r.failures.map((f) => `${f.part}: FAILED: ${f.error.split('\n')[0]}`);
  const targets = table(
    ['target', 'goal', 'measured', 'met'],
    r.targets.map((t) => [t.name, t.goal, t.value, t.met ? 'yes' : 'NO']),
  );
  return [...parts, ...failures, targets].join('\n\n');
}
