import type { PublicReport, ReportState, StatusReportView } from '@telemetry/contract';
import type { NoticeDraft } from './notices.js';

/**
 * What subscribers are told of a status report (docs/console.md, "Status reports"): the
 * notice's plain-text title and body (the email's subject and text, the feed entry's title
 * and content) and its webhook data (`report`, `update`: StatusNoticeWebhook). Texts are
 * as typed: markup in them is never interpreted here (mail is plain text; feeds escape).
 */

/** The page a report is on, as its notices name it. */
export interface ReportPageContext {
  slug: string;
  tenantId: string;
  title: string;
  /** Names of the page's monitors by id (a report's monitors not among them are left out of what the public sees). */
  monitorNames: ReadonlyMap<string, string>;
}

const STATE_WORDS: Record<ReportState, string> = {
  investigating: 'Investigating',
  identified: 'Identified',
  monitoring: 'Monitoring',
  resolved: 'Resolved',
};

/** A report as anyone sees it: names of its monitors that are on the page, and no owner's fields. */
export function publicReportOf(r: StatusReportView, names: ReadonlyMap<string, string>): PublicReport {
  return {
    id: r.id,
    title: r.title,
    impact: r.impact,
    state: r.state,
    monitors: r.monitor_ids.flatMap((id) => (names.has(id) ? [{ id, name: names.get(id)! }] : [])),
    created_at: r.created_at,
    updated_at: r.updated_at,
    resolved_at: r.resolved_at,
    updates: r.updates.map((u) => ({ id: u.id, state: u.state, message: u.message, at: u.at })),
  };
}

/**
 * The notice of a published report (`report_opened`, with its newest update) or of an
 * update of one (`report_updated`). Title `[<page>] <report>: <State>`; the body says the
 * message, the state, the impact, the affected monitors and the update's time.
 */
export function reportNotice(
  page: ReportPageContext,
  kind: 'report_opened' | 'report_updated',
  report: StatusReportView,
  updateId: string,
): NoticeDraft {
  const shown = publicReportOf(report, page.monitorNames);
  const update = shown.updates.find((u) => u.id === updateId) ?? shown.updates[0]!;
  const affected = shown.monitors.length > 0 ? shown.monitors.map((m) => m.name).join(', ') : 'the whole page';
  const body = [
    update.message,
    '',
    `Status: ${STATE_WORDS[update.state]}`,
    `Impact: ${report.impact}`,
    `Affected: ${affected}`,
    `Time: ${update.at}`,
  ].join('\n');
  return {
    slug: page.slug,
    tenantId: page.tenantId,
    kind,
    reportId: report.id,
    updateId: update.id,
    monitorIds: report.monitor_ids,
    title: `[${page.title}] ${report.title}: ${STATE_WORDS[update.state]}`,
    body,
    payload: { report: shown, update },
  };
}
