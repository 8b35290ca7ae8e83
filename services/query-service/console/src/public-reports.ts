import type { PublicMaintenance, PublicReport, ReportImpact, ReportState } from '@telemetry/contract';
import { h, time } from './dom.js';

/**
 * Status reports and maintenance as the public page, its history and the console show them.
 * Every text a person typed (titles, messages) goes in as text, never as HTML: a message
 * holding `<script>` shows those characters.
 */

export const STATE_LABELS: Record<ReportState, string> = {
  investigating: 'Investigating',
  identified: 'Identified',
  monitoring: 'Monitoring',
  resolved: 'Resolved',
};

export const IMPACT_LABELS: Record<ReportImpact, string> = {
  none: 'No impact',
  minor: 'Minor impact',
  major: 'Major impact',
  critical: 'Critical impact',
};

/** A report's state as a badge (resolved shows as up, the rest as under way). */
export function stateBadge(state: ReportState): HTMLElement {
  return h('span', { class: `badge state-${state}` }, STATE_LABELS[state]);
}

export function impactBadge(impact: ReportImpact): HTMLElement {
  return h('span', { class: `badge impact-${impact}` }, IMPACT_LABELS[impact]);
}

interface UpdateLike {
  id: string;
  state: ReportState;
  message: string;
  at: string;
}

/** A report's updates, newest first, as given: each its state, time and message (line breaks kept). */
export function updateList(updates: readonly UpdateLike[]): HTMLElement {
  return h(
    'ol',
    { class: 'updates', reversed: true },
    updates.map((u) =>
      h(
        'li',
        { 'data-update': u.id },
        h('p', { class: 'update-head' }, h('strong', {}, STATE_LABELS[u.state]), ' · ', time(u.at)),
        h('p', { class: 'message' }, u.message),
      ),
    ),
  );
}

/** One public report: its title (at heading `level`), impact, state, affected monitors and updates. */
export function reportArticle(r: PublicReport, level: 'h2' | 'h3'): HTMLElement {
  return h(
    'article',
    // Its id is the fragment the feeds' entries link to (`…/history#rpt_…`).
    { class: 'report', id: r.id, 'data-report': r.id },
    h(level, {}, r.title),
    h(
      'p',
      { class: 'report-meta' },
      stateBadge(r.state),
      ' ',
      impactBadge(r.impact),
      r.monitors.length ? ` Affects ${r.monitors.map((m) => m.name).join(', ')}.` : ' Affects the whole service.',
      r.resolved_at ? [' Resolved ', time(r.resolved_at), '.'] : null,
    ),
    updateList(r.updates),
  );
}

/** After a page is drawn: the report its address's fragment names (a feed entry's link) in view. */
export function showLinkedReport(): void {
  const id = decodeURIComponent(location.hash.slice(1));
  if (/^rpt_[a-z0-9]+$/.test(id)) document.getElementById(id)?.scrollIntoView();
}

/** Maintenance in progress or coming up, soonest first. */
export function maintenanceList(items: readonly PublicMaintenance[]): HTMLElement {
  return h(
    'ul',
    { class: 'maintenance' },
    items.map((m) =>
      h(
        'li',
        { class: m.in_progress ? 'in-progress' : 'scheduled', 'data-monitor': m.monitor.id },
        h(
          'p',
          { class: 'update-head' },
          h(
            'span',
            { class: `badge ${m.in_progress ? 'maintenance-now' : 'maintenance-later'}` },
            m.in_progress ? 'In progress' : 'Scheduled',
          ),
          ' ',
          h('strong', {}, m.monitor.name),
          m.in_progress ? [' until ', time(m.ends_at)] : [' from ', time(m.starts_at), ' to ', time(m.ends_at)],
        ),
        m.message ? h('p', { class: 'message' }, m.message) : null,
      ),
    ),
  );
}
