/** The figures of a fault run, as a Markdown section of RELIABILITY.md and as JSON. */

export interface ScenarioFigures {
  name: string;
  /** What was done, in words. */
  fault: string;
  sent: number;
  acknowledged: number;
  failed: number;
  /** Acknowledged events found in ClickHouse (FINAL). */
  found: number;
  /** acknowledged - found. */
  lost: number;
  /** Event ids read more than once through FINAL. */
  duplicatedAsRead: number;
  /** Events that got no 200 but are stored anyway (allowed: at-least-once). */
  landedDespiteError: number;
  /** Rows as read with FINAL, with LIMIT 1 BY event_id, and as stored. */
  finalRows: number;
  limitOneByRows: number;
  storedRows: number;
  /** Rows of this source that the load did not send (must be 0). */
  unexpected: number;
  /** Seconds from the start of the recovery until every /readyz is 200 and an event acknowledged after it is readable. */
  recoverySeconds: number | null;
  /** Seconds from the end of the load until the consumer group had committed everything. */
  catchUpSeconds: number | null;
  /** Every service answered /readyz 200 after the scenario, without a manual step. */
  recovered: boolean;
  /** Answers other than 200, by kind. */
  failures: Record<string, number>;
  /** Scenario-specific observations (evidence). */
  notes: string[];
  /** Documented behaviour not met although nothing was lost or duplicated (fails only with FAULTS_STRICT=1). */
  findings: string[];
  /** Why the scenario failed (empty: passed). */
  problems: string[];
  seconds: number;
  ok: boolean;
}

export interface RunFigures {
  command: string;
  short: boolean;
  date: string;
  machine: string;
  durationSeconds: number;
  ok: boolean;
  logDir: string;
  scenarios: ScenarioFigures[];
}

function fmt(n: number | null): string {
  return n === null ? '-' : String(n);
}

export function renderSection(run: RunFigures): string {
  const rows = run.scenarios.map((s) =>
    [
      `\`${s.name}\``,
      s.sent,
      s.acknowledged,
      s.failed,
      s.found,
      s.lost,
      s.duplicatedAsRead,
      s.landedDespiteError,
      fmt(s.recoverySeconds),
      fmt(s.catchUpSeconds),
      s.recovered ? 'yes' : '**no**',
      s.ok ? (s.findings.length > 0 ? 'pass, with a finding' : 'pass') : '**FAIL**',
    ].join(' | '),
  );
  const failures = run.scenarios.map(
    (s) =>
      `- \`${s.name}\` (${s.fault}): ${
        Object.entries(s.failures)
          .map(([k, n]) => `${n} × \`${k}\``)
          .join(', ') || 'no failed requests'
      }${s.notes.length > 0 ? `. ${s.notes.join('. ')}` : ''}${s.findings.length > 0 ? `. **Finding:** ${s.findings.join('; ')}` : ''}${s.problems.length > 0 ? `. **Problems:** ${s.problems.join('; ')}` : ''}.`,
  );
  return [
    `Run on ${run.date} with \`${run.command}\`${run.short ? ' (short version)' : ''}, ${run.durationSeconds} s in all, on ${run.machine}. ` +
      `Result: **${run.ok ? 'pass' : 'FAIL'}**.`,
    '',
    '| scenario | sent | acknowledged | failed | found | lost | duplicated as read | failed but stored | recovery s | catch-up s | ready again | result |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|',
    ...rows.map((r) => `| ${r} |`),
    '',
    'Events are counted one by one (batches of 10). _found_: acknowledged events read back ' +
      'with `FINAL` (and `LIMIT 1 BY event_id` gave the same row count); _lost_ = acknowledged - found; ' +
      '_duplicated as read_: event ids that `FINAL` returns more than once; _failed but stored_: events ' +
      'that did not get a 200 but reached ClickHouse anyway (allowed, at-least-once; never counted as accepted). ' +
      '_recovery s_: from the start of the recovery (restart begun, or the second consumer told to stop) until every ' +
      'service answers `/readyz` 200 and an event acknowledged after that start is readable in ClickHouse. ' +
      '_catch-up s_: from the end of the load until the consumer group had committed every message.',
    '',
    'Answers other than 200, and observations:',
    '',
    ...failures,
  ].join('\n');
}
