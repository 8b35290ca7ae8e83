import type { MaintenanceWindow, Weekday } from '@telemetry/contract';

const DAY_INDEX: Record<string, number> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4, Sat: 5, Sun: 6 };
const WEEKDAYS: Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const formats = new Map<string, Intl.DateTimeFormat>();

/** The weekday and the minutes since midnight of `at`, by the wall clock of `timeZone`. */
function localTime(at: Date, timeZone: string): { day: number; minutes: number } {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formats.set(timeZone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return { day: DAY_INDEX[parts.weekday ?? ''] ?? 0, minutes: Number(parts.hour) * 60 + Number(parts.minute) };
}

/**
 * Is `at` inside one of `windows` (docs/monitors.md, "Maintenance windows")? A one-off
 * window is [from, to). A recurring one starts at `start` by the wall clock of its time
 * zone, on each of `days` (every day when absent), and lasts `duration_minutes`, past
 * midnight and over several days if it says so. A zone that Intl does not know (it was
 * checked when the monitor was saved) counts as no window.
 */
export function inMaintenance(windows: readonly MaintenanceWindow[], at: Date): boolean {
  return windows.some((w) => {
    if ('from' in w) return at.getTime() >= Date.parse(w.from) && at.getTime() < Date.parse(w.to);
    let local: { day: number; minutes: number };
    try {
      local = localTime(at, w.time_zone);
    } catch {
      return false;
    }
    const [h, m] = w.start.split(':').map(Number);
    const start = h! * 60 + m!;
    // The window may have started on any of the last days its duration spans.
    for (let back = 0; back * 1440 <= w.duration_minutes + 1440; back++) {
      const day = (local.day - back + 7 * 8) % 7;
      if (w.days && !w.days.includes(WEEKDAYS[day]!)) continue;
      const since = local.minutes + back * 1440 - start;
      if (since >= 0 && since < w.duration_minutes) return true;
    }
    return false;
  });
}
