import { expect } from 'chai';
import { inMaintenance, maintenanceOccurrences } from '../../libs/contract/src/maintenance.js';

describe('maintenance windows (unit)', () => {
  it('holds a one-off window from its start up to (not including) its end', () => {
    const w = [{ from: '2026-11-23T10:00:00Z', to: '2026-11-23T11:00:00Z' }];
    expect(inMaintenance(w, new Date('2026-11-23T09:59:59Z'))).to.equal(false);
    expect(inMaintenance(w, new Date('2026-11-23T10:00:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-11-23T10:59:59Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-11-23T11:00:00Z'))).to.equal(false);
    expect(inMaintenance([], new Date('2026-11-23T10:30:00Z'))).to.equal(false);
  });

  it('holds a recurring window by the wall clock of its time zone, on its days only', () => {
    // Sundays 02:00-04:00 in New York (UTC-5 in November): 07:00-09:00 UTC.
    const w = [{ days: ['sun' as const], start: '02:00', duration_minutes: 120, time_zone: 'America/New_York' }];
    expect(inMaintenance(w, new Date('2026-11-22T06:59:00Z'))).to.equal(false);
    expect(inMaintenance(w, new Date('2026-11-22T07:00:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-11-22T08:59:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-11-22T09:00:00Z'))).to.equal(false);
    // The same hours on a Monday are not in it.
    expect(inMaintenance(w, new Date('2026-11-23T07:30:00Z'))).to.equal(false);
    // Every day when no days are given.
    const daily = [{ start: '02:00', duration_minutes: 120, time_zone: 'America/New_York' }];
    expect(inMaintenance(daily, new Date('2026-11-23T07:30:00Z'))).to.equal(true);
  });

  it('runs past midnight and over days, counted from the day it started', () => {
    // Saturdays 23:00 for 3 hours, Berlin (UTC+1 in November): Sat 22:00 UTC to Sun 01:00 UTC.
    const w = [{ days: ['sat' as const], start: '23:00', duration_minutes: 180, time_zone: 'Europe/Berlin' }];
    expect(inMaintenance(w, new Date('2026-11-21T22:30:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-11-22T00:59:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-11-22T01:00:00Z'))).to.equal(false);
    // A Friday 23:00 is not a Saturday's start.
    expect(inMaintenance(w, new Date('2026-11-20T22:30:00Z'))).to.equal(false);
    // Two days long, from Friday 18:00 UTC.
    const long = [{ days: ['fri' as const], start: '18:00', duration_minutes: 2880, time_zone: 'UTC' }];
    expect(inMaintenance(long, new Date('2026-11-22T17:59:00Z'))).to.equal(true);
    expect(inMaintenance(long, new Date('2026-11-22T18:00:00Z'))).to.equal(false);
  });

  it('lasts duration_minutes of real time on the days the clocks change', () => {
    // Daily 01:00 for 2 hours, Berlin. Spring forward on 2026-03-29 (02:00 CET -> 03:00 CEST):
    // 00:00Z to 02:00Z.
    const w = [{ start: '01:00', duration_minutes: 120, time_zone: 'Europe/Berlin' }];
    expect(inMaintenance(w, new Date('2026-03-28T23:59:00Z'))).to.equal(false);
    expect(inMaintenance(w, new Date('2026-03-29T00:00:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-03-29T01:30:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-03-29T02:00:00Z'))).to.equal(false);
    // Fall back on 2026-10-25 (03:00 CEST -> 02:00 CET): 01:00 CEST is 23:00Z, so 23:00Z to 01:00Z.
    expect(inMaintenance(w, new Date('2026-10-24T22:59:00Z'))).to.equal(false);
    expect(inMaintenance(w, new Date('2026-10-24T23:00:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-10-25T00:59:00Z'))).to.equal(true);
    expect(inMaintenance(w, new Date('2026-10-25T01:00:00Z'))).to.equal(false);
    // The clocks show 02:30 twice that night (00:30Z and 01:30Z): a 30-minute window at 02:30 runs once.
    const short = [{ start: '02:30', duration_minutes: 30, time_zone: 'Europe/Berlin' }];
    const first = inMaintenance(short, new Date('2026-10-25T00:45:00Z'));
    const second = inMaintenance(short, new Date('2026-10-25T01:45:00Z'));
    expect([first, second].filter(Boolean)).to.have.length(1);
  });

  it('counts a time zone it does not know as no window', () => {
    const w = [{ start: '00:00', duration_minutes: 1440, time_zone: 'Mars/Olympus_Mons' }];
    expect(inMaintenance(w, new Date('2026-11-23T12:00:00Z'))).to.equal(false);
  });
});

describe('maintenance occurrences (unit)', () => {
  it('lists the times windows hold within a range, soonest first, with the window they come from', () => {
    const daily = { start: '02:00', duration_minutes: 60, time_zone: 'UTC', message: 'database upgrade' };
    const once = { from: '2026-11-24T10:00:00Z', to: '2026-11-24T12:00:00Z' };
    const got = maintenanceOccurrences(
      [daily, once],
      Date.parse('2026-11-23T02:30:00Z'),
      Date.parse('2026-11-25T00:00:00Z'),
    ).map((o) => [new Date(o.start).toISOString(), new Date(o.end).toISOString(), o.window === daily]);
    expect(got).to.deep.equal([
      ['2026-11-23T02:00:00.000Z', '2026-11-23T03:00:00.000Z', true],
      ['2026-11-24T02:00:00.000Z', '2026-11-24T03:00:00.000Z', true],
      ['2026-11-24T10:00:00.000Z', '2026-11-24T12:00:00.000Z', false],
    ]);
  });

  it('finds a recurring window that began days before the range and is still running', () => {
    const long = { days: ['mon' as const], start: '22:00', duration_minutes: 3 * 1440, time_zone: 'Europe/Berlin' };
    // Monday 2026-11-23 22:00 in Berlin (UTC+1) is 21:00 UTC; it runs to Thursday 21:00 UTC.
    const got = maintenanceOccurrences([long], Date.parse('2026-11-26T12:00:00Z'), Date.parse('2026-11-26T13:00:00Z'));
    expect(got.map((o) => new Date(o.start).toISOString())).to.deep.equal(['2026-11-23T21:00:00.000Z']);
    expect(
      maintenanceOccurrences([long], Date.parse('2026-11-26T21:00:00Z'), Date.parse('2026-11-26T22:00:00Z')),
    ).to.deep.equal([]);
  });
});
