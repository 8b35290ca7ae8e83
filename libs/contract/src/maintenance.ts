import type { Weekday } from './limits.js';
import type { MaintenanceWindow } from './types.js';

const WEEKDAYS: Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const DAY_MS = 86_400_000;
const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall clock of `timeZone` at `at`, to the minute, as if it were UTC (milliseconds). */
function wallClock(at: number, timeZone: string): number {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      hourCycle: 'h23',
    });
    formats.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(at).map((x) => [x.type, Number(x.value)]));
  return Date.UTC(p.year!, p.month! - 1, p.day, p.hour, p.minute);
}

/**
 * The instant at which the wall clock of `timeZone` shows `wall` (milliseconds, as UTC).
 * Offsets are found by asking Intl twice, so a change of offset (DST) between the guess
 * and the answer is followed; a wall time the clocks skip maps to just after the gap.
 */
function instantOf(wall: number, timeZone: string): number {
  let t = wall;
  for (let i = 0; i < 2; i++) t = wall - (wallClock(t, timeZone) - Math.floor(t / 60_000) * 60_000);
  return t;
}

/** One time a maintenance window holds: [start, end) in ms, and the window it comes from. */
export interface MaintenanceOccurrence {
  start: number;
  end: number;
  window: MaintenanceWindow;
}

/**
 * The times `windows` hold that overlap [from, to) (ms), soonest first (docs/monitors.md,
 * "Maintenance windows"). A one-off window is [from, to). A recurring one starts when the
 * wall clock of its time zone shows `start` on one of `days` (every day when absent) and
 * lasts `duration_minutes` of real time, past midnight and over several days if it says
 * so, across a change to or from daylight saving time too. A zone that Intl does not know
 * (it was checked when the monitor was saved) has no occurrences.
 */
export function maintenanceOccurrences(
  windows: readonly MaintenanceWindow[],
  from: number,
  to: number,
): MaintenanceOccurrence[] {
  const out: MaintenanceOccurrence[] = [];
  for (const w of windows) {
    if ('from' in w) {
      const start = Date.parse(w.from);
      const end = Date.parse(w.to);
      if (start < to && end > from) out.push({ start, end, window: w });
      continue;
    }
    let first: number;
    let last: number;
    try {
      first = Math.floor(wallClock(from, w.time_zone) / DAY_MS) * DAY_MS;
      last = Math.floor(wallClock(to, w.time_zone) / DAY_MS) * DAY_MS;
    } catch {
      continue;
    }
    const [h, m] = w.start.split(':').map(Number);
    const length = w.duration_minutes * 60_000;
    // It may have started on any of the days its duration spans before `from`, and the day before.
    for (let day = first - (Math.ceil(w.duration_minutes / 1440) + 1) * DAY_MS; day <= last; day += DAY_MS) {
      if (w.days && !w.days.includes(WEEKDAYS[(new Date(day).getUTCDay() + 6) % 7]!)) continue;
      const start = instantOf(day + (h! * 60 + m!) * 60_000, w.time_zone);
      if (start < to && start + length > from) out.push({ start, end: start + length, window: w });
    }
  }
  return out.sort((a, b) => a.start - b.start || a.end - b.end);
}

/** Is `at` inside one of `windows` (maintenanceOccurrences)? */
export function inMaintenance(windows: readonly MaintenanceWindow[], at: Date): boolean {
  const now = at.getTime();
  return maintenanceOccurrences(windows, now, now + 1).length > 0;
}
