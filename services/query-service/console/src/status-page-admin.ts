import type { Monitor, StatusPage } from '@telemetry/contract';
import { get } from './api.js';
import { h, loadView, show } from './dom.js';
import type { PageContext } from './follow-kit.js';
import { roleNote } from './guard.js';
import { badgesSection, domainsSection, subscribersSection } from './status-audience.js';
import { reportsSection } from './status-reports.js';

/**
 * #/status-pages/{slug}: one status page in the console (docs/console.md, "Status pages
 * people follow"): its reports and updates, its subscribers, its custom domains and its
 * monitors' badges. Each section loads by itself.
 */
export async function statusPageAdmin(main: HTMLElement, slug: string): Promise<void> {
  const loaded = await loadView(
    main,
    'Status page',
    undefined,
    () =>
      Promise.all([
        get<StatusPage>(`/api/status-pages/${encodeURIComponent(slug)}`),
        get<Monitor[]>('/api/monitors?limit=1000'),
      ]),
    () => void statusPageAdmin(main, slug),
  );
  if (!loaded) return;
  const [page, monitors] = loaded;
  const names = new Map(monitors.map((m) => [m.id, m.name]));
  const ctx: PageContext = {
    slug,
    api: `/api/status-pages/${encodeURIComponent(slug)}`,
    monitors: page.monitor_ids.map((id) => ({ id, name: names.get(id) ?? id })),
  };
  const publicPath = `/status/${encodeURIComponent(slug)}`;
  show(
    main,
    h('p', {}, h('a', { href: '#/status-pages' }, '← All status pages')),
    h('h1', {}, page.title),
    h(
      'p',
      {},
      'Public at ',
      h('a', { href: publicPath, id: 'public-page-link' }, publicPath),
      ' · ',
      h('a', { href: `${publicPath}/history` }, 'its past incidents'),
    ),
    roleNote('monitors:write'),
    reportsSection(ctx),
    subscribersSection(ctx),
    domainsSection(ctx),
    badgesSection(ctx),
  );
}
