import { expect } from 'chai';
import { slaOf } from '@telemetry/store';

describe('slaOf: SLA figures of a range from its incidents', () => {
  const from = 1_000_000;
  const to = from + 1000;

  it('counts an open incident until now when the range is still running, and the availability of the time so far', () => {
    const sla = slaOf([{ started: from + 100, ups: 0, resolved: 0 }], from, to, from + 300);
    expect(sla).to.deep.equal({
      availability_percent: 33.333,
      downtime_seconds: 200,
      incidents: 1,
      longest_incident_seconds: 200,
      mean_incident_seconds: 200,
    });
  });

  it('has no availability for a range that has not begun, and counts no incident that starts after now', () => {
    expect(slaOf([], from, to, from - 10).availability_percent).to.equal(null);
    const sla = slaOf([{ started: from + 500, ups: 0, resolved: 0 }], from, to, from + 300);
    expect(sla.incidents).to.equal(0);
    expect(sla.downtime_seconds).to.equal(0);
    expect(sla.availability_percent).to.equal(100);
  });

  it('clips incidents to the range on both sides, and takes numbers as ClickHouse sends them (strings)', () => {
    const sla = slaOf(
      [
        { started: String(from - 50), ups: '1', resolved: String(from + 50) },
        { started: String(to - 20), ups: '1', resolved: String(to + 500) },
      ],
      from,
      to,
      to + 10_000,
    );
    expect(sla).to.deep.equal({
      availability_percent: 93,
      downtime_seconds: 70,
      incidents: 2,
      longest_incident_seconds: 50,
      mean_incident_seconds: 35,
    });
  });
});
