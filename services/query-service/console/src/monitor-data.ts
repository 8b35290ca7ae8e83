import type { Check, Monitor } from '@telemetry/contract';
import { call, get } from './api.js';
import { quantile } from './chart.js';

// What the monitor pages read from the API, shaped for them: monitors, uptimes, chart buckets.

/** The counts of GET /api/monitors/{id}/checks/summary: its total and each interval. */
export interface Stats {
  checks: number;
  up: number;
  degraded: number;
  down: number;
  uptime_percent: number | null;
  response_time: { p50: number; p95: number; p99: number } | null;
}
export interface Summary {
  total: Stats;
  intervals: (Stats & { start: string })[];
}

export const HOUR = 3600;
export const DAY = 24 * HOUR;

export function isoAgo(seconds: number): string {
  return new Date(Date.now() - seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Every monitor of the key, following next_cursor. */
export async function allMonitors(): Promise<Monitor[]> {
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
export async function uptimes(id: string): Promise<[number | null, number | null, number | null]> {
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
export async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(n, queue.length) }, async () => {
      for (let t = queue.shift(); t !== undefined; t = queue.shift()) await fn(t);
    }),
  );
}

export const RANGES = [
  { id: '1h', label: 'Last hour', seconds: HOUR },
  { id: '24h', label: 'Last 24 hours', seconds: DAY },
  { id: '7d', label: 'Last 7 days', seconds: 7 * DAY },
  { id: '30d', label: 'Last 30 days', seconds: 30 * DAY },
  { id: '90d', label: 'Last 90 days', seconds: 90 * DAY },
] as const;

export interface Bucket {
  t: number;
  p50: number | null;
  p95: number | null;
  checks: number;
  down: number;
}

/** The last hour, per minute, from the checks themselves (quantiles computed here). */
export async function minuteBuckets(id: string): Promise<Bucket[]> {
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
export async function summaryBuckets(id: string, seconds: number): Promise<Bucket[]> {
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
