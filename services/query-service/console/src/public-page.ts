import type { PublicStatusPage } from '@telemetry/contract';
import { h, percent, show, statusBadge, time } from './dom.js';
import { pageFailure, readPublicPage, type PageAt } from './public-at.js';
import { followSection } from './public-follow.js';
import { maintenanceList, reportArticle, showLinkedReport } from './public-reports.js';

/**
 * The public page at /status/{slug}: no key, names and statuses only, its open reports and
 * maintenance, and how to follow it. The statuses refresh every minute; the subscribe forms
 * are drawn once, so a refresh never clears what the visitor is typing.
 */
export async function publicStatusPage(main: HTMLElement, at: PageAt): Promise<void> {
  const live = h('div', { class: 'live' });
  let follow: HTMLElement | undefined;
  const refresh = async (): Promise<void> => {
    let page: PublicStatusPage;
    try {
      page = await readPublicPage(at);
    } catch (err) {
      // A refresh that fails keeps what was shown; only the first load shows the failure.
      if (!follow) pageFailure(main, err, () => void refresh());
      return;
    }
    drawLive(live, page, at);
    if (!follow) {
      follow = followSection(page, at);
      show(main, live, follow);
      showLinkedReport();
    }
  };
  await refresh();
  setInterval(() => void refresh(), 60_000);
}

function drawLive(live: HTMLElement, page: PublicStatusPage, at: PageAt): void {
  document.title = `${page.title} status`;
  show(
    live,
    h('h1', {}, page.title),
    page.description ? h('p', {}, page.description) : null,
    h(
      'p',
      { class: `banner ${page.status}`, role: 'status' },
      page.status === 'up' ? 'All systems operational' : 'Some systems are down',
    ),
    // The service could not read the current statuses: say how old these are.
    page.stale
      ? h(
          'p',
          { class: 'banner stale', role: 'alert' },
          'These statuses are from ',
          time(page.generated_at),
          ': the current ones cannot be read right now.',
        )
      : null,
    page.reports.length
      ? h(
          'section',
          { 'aria-labelledby': 'h-reports', id: 'reports' },
          h('h2', { id: 'h-reports' }, 'Current incidents'),
          page.reports.map((r) => reportArticle(r, 'h3')),
        )
      : null,
    page.maintenance.length
      ? h(
          'section',
          { 'aria-labelledby': 'h-maintenance', id: 'maintenance' },
          h('h2', { id: 'h-maintenance' }, 'Maintenance'),
          maintenanceList(page.maintenance),
        )
      : null,
    page.incidents.length
      ? h(
          'section',
          { 'aria-labelledby': 'h-open' },
          h('h2', { id: 'h-open' }, 'Open incidents'),
          h(
            'ul',
            {},
            page.incidents.map((i) => h('li', {}, `${i.monitor} is down since `, time(i.started_at))),
          ),
        )
      : null,
    h(
      'section',
      { 'aria-labelledby': 'h-monitors' },
      h('h2', { id: 'h-monitors' }, `Uptime over ${page.days} days`),
      page.monitors.map((m) =>
        h(
          'article',
          { class: 'status-monitor' },
          h(
            'h3',
            {},
            m.name,
            ' ',
            statusBadge(m.status),
            h('span', { class: 'muted' }, ` ${percent(m.uptime_percent)} uptime`),
          ),
          h(
            'ol',
            { class: 'bars days', 'aria-label': `${m.name}: daily uptime, oldest first` },
            m.days.map((d) =>
              h('li', {
                class:
                  d.uptime_percent === null
                    ? 'none'
                    : d.uptime_percent >= 99.9
                      ? 'up'
                      : d.uptime_percent >= 95
                        ? 'partial'
                        : 'down',
                title: `${d.date}: ${d.uptime_percent === null ? 'no data' : percent(d.uptime_percent)}`,
              }),
            ),
          ),
        ),
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      'Updated ',
      time(page.generated_at),
      '. ',
      h('a', { href: `${at.base}/history`, id: 'history-link' }, 'Past incidents'),
    ),
  );
}
