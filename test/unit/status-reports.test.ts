import { expect } from 'chai';
import type { StatusReportView } from '@telemetry/contract';
import { publicReportOf, reportNotice, type ReportPageContext } from '@telemetry/store';
import { publicMaintenanceOf } from '../../services/query-service/src/status/public-page.js';

/** What a status report's notice says, what the public sees of a report, and the page's maintenance list. */
describe('status reports: notices, public views, maintenance shown', () => {
  const page: ReportPageContext = {
    slug: 'shop',
    tenantId: 'ten_a',
    title: 'Shop <status>',
    monitorNames: new Map([
      ['mon_a', 'Checkout'],
      ['mon_b', 'Search'],
    ]),
  };
  const report: StatusReportView = {
    id: 'rpt_00000000000000000001',
    slug: 'shop',
    title: 'Payments & <b>cards</b>',
    impact: 'minor',
    monitor_ids: ['mon_a', 'mon_gone'],
    state: 'identified',
    draft: false,
    incident_id: 'inc-1',
    created_at: '2026-11-26T10:00:00Z',
    updated_at: '2026-11-26T10:05:00Z',
    resolved_at: null,
    updates: [
      {
        id: 'upd_2',
        state: 'identified',
        message: 'A <i>slow</i> database',
        at: '2026-11-26T10:05:00Z',
        created_at: '2026-11-26T10:05:01Z',
      },
      {
        id: 'upd_1',
        state: 'investigating',
        message: 'Looking',
        at: '2026-11-26T10:00:00Z',
        created_at: '2026-11-26T10:00:01Z',
      },
    ],
  };

  it("shows the public only the page's monitors by name, and none of the owner's fields", () => {
    const shown = publicReportOf(report, page.monitorNames);
    expect(shown.monitors).to.deep.equal([{ id: 'mon_a', name: 'Checkout' }]);
    expect(shown).to.not.have.any.keys('draft', 'incident_id', 'slug', 'monitor_ids');
    expect(shown.updates[0]).to.deep.equal({
      id: 'upd_2',
      state: 'identified',
      message: 'A <i>slow</i> database',
      at: '2026-11-26T10:05:00Z',
    });
  });

  it('titles and writes a notice in plain text, markup as typed, with the update it is about', () => {
    const n = reportNotice(page, 'report_updated', report, 'upd_1');
    expect(n).to.deep.include({
      slug: 'shop',
      tenantId: 'ten_a',
      kind: 'report_updated',
      reportId: report.id,
      updateId: 'upd_1',
    });
    expect(n.title).to.equal('[Shop <status>] Payments & <b>cards</b>: Investigating');
    expect(n.body).to.equal(
      [
        'Looking',
        '',
        'Status: Investigating',
        'Impact: minor',
        'Affected: Checkout',
        'Time: 2026-11-26T10:00:00Z',
      ].join('\n'),
    );
    expect(n.monitorIds).to.deep.equal(['mon_a', 'mon_gone']);
    expect(n.payload).to.deep.equal({
      report: publicReportOf(report, page.monitorNames),
      update: { id: 'upd_1', state: 'investigating', message: 'Looking', at: '2026-11-26T10:00:00Z' },
    });
    const whole = reportNotice(page, 'report_opened', { ...report, monitor_ids: [] }, 'upd_2');
    expect(whole.body).to.contain('Affected: the whole page');
    expect(whole.title).to.match(/: Identified$/);
  });

  it('lists maintenance in progress and within the days shown, soonest first, with messages', () => {
    const now = Date.parse('2026-11-26T12:00:00Z');
    const shown = publicMaintenanceOf(
      [
        {
          id: 'mon_a',
          name: 'Checkout',
          maintenance_windows: [
            { from: '2026-11-27T01:00:00Z', to: '2026-11-27T02:00:00Z', message: 'Upgrade' },
            { from: '2026-12-10T01:00:00Z', to: '2026-12-10T02:00:00Z' },
            { from: '2026-11-20T01:00:00Z', to: '2026-11-20T02:00:00Z' },
          ],
        },
        {
          id: 'mon_b',
          name: 'Search',
          // Thursdays at 11:30 UTC for an hour: in progress now (a Thursday, 12:00), and again in 7 days, just inside.
          maintenance_windows: [{ days: ['thu'], start: '11:30', duration_minutes: 60, time_zone: 'UTC' }],
        },
      ],
      now,
    );
    expect(shown.map((w) => [w.monitor.name, w.starts_at, w.in_progress, w.message])).to.deep.equal([
      ['Search', '2026-11-26T11:30:00Z', true, null],
      ['Checkout', '2026-11-27T01:00:00Z', false, 'Upgrade'],
      ['Search', '2026-12-03T11:30:00Z', false, null],
    ]);
    const during = publicMaintenanceOf(
      [
        {
          id: 'mon_a',
          name: 'Checkout',
          maintenance_windows: [{ from: '2026-11-26T11:00:00Z', to: '2026-11-26T13:00:00Z' }],
        },
      ],
      now,
    );
    expect(during).to.deep.equal([
      {
        monitor: { id: 'mon_a', name: 'Checkout' },
        starts_at: '2026-11-26T11:00:00Z',
        ends_at: '2026-11-26T13:00:00Z',
        in_progress: true,
        message: null,
      },
    ]);
  });
});
