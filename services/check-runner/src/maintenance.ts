import type { MaintenanceWindow, Weekday } from '@telemetry/contract';

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

/**
 * Is `at` inside one of `windows` (docs/monitors.md, "Maintenance windows")? A one-off
 * window is [from, to). A recurring one starts when the wall clock of its time zone shows
 * `start` on one of `days` (every day when absent) and lasts `duration_minutes` of real
 * time, past midnight and over several days if it says so, across a change to or from
 * daylight saving time too. A zone that Intl does not know (it was checked when the
 * monitor was saved) counts as no window.
 */
export function inMaintenance(windows: readonly MaintenanceWindow[], at: Date): boolean {
  const now = at.getTime();
  return windows.some((w) => {
    if ('from' in w) return now >= Date.parse(w.from) && now < Date.parse(w.to);
    let today: number;
    try {
      today = Math.floor(wallClock(now, w.time_zone) / DAY_MS) * DAY_MS;
    } catch {
      return false;
    }
    const [h, m] = w.start.split(':').map(Number);
    // The window may have started on any of the days its duration spans, and the day before.
    for (let back = 0; back * 1440 <= w.duration_minutes + 1440; back++) {
      const day = today - back * DAY_MS;
      if (w.days && !w.days.includes(WEEKDAYS[(new Date(day).getUTCDay() + 6) % 7]!)) continue;
      const start = instantOf(day + (h! * 60 + m!) * 60_000, w.time_zone);
      if (now >= start && now < start + w.duration_minutes * 60_000) return true;
    }
    return false;
  });
}
