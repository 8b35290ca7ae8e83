import type { PublicReport } from '@telemetry/contract';
import { call } from './api.js';
import { h, show } from './dom.js';
import { pageFailure, readPublicPage, type PageAt } from './public-at.js';
import { reportArticle, showLinkedReport } from './public-reports.js';

/**
 * /status/{slug}/history: the page's past (resolved) reports, newest first, a page of them
 * at a time; `?cursor=` (the API's next_cursor) is the next page, so each page has an
 * address. Ids a test can find: #history, a#older, a#newest.
 */
export async function historyPage(main: HTMLElement, at: PageAt): Promise<void> {
  const cursor = new URLSearchParams(location.search).get('cursor');
  const query = new URLSearchParams({ limit: '20', ...(cursor ? { cursor } : {}) });
  let title: string;
  let reports: PublicReport[];
  let next: string | null | undefined;
  try {
    const [page, history] = await Promise.all([
      readPublicPage(at),
      call<PublicReport[]>('GET', `/api/status/${encodeURIComponent(at.slug)}/history?${query}`, undefined, false),
    ]);
    title = page.title;
    reports = history.data;
    next = history.next_cursor;
  } catch (err) {
    pageFailure(main, err, () => void historyPage(main, at));
    return;
  }
  document.title = `${title}: past incidents`;
  const here = `${at.base}/history`;
  show(
    main,
    h('h1', {}, `${title}: past incidents`),
    h('p', {}, h('a', { href: at.base || '/' }, '← Current status')),
    h(
      'section',
      { id: 'history', 'aria-label': 'Resolved incidents, newest first' },
      reports.length === 0
        ? h('p', { class: 'empty' }, cursor ? 'No older incidents.' : 'No past incidents.')
        : reports.map((r) => reportArticle(r, 'h2')),
    ),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages of past incidents' },
      cursor ? h('a', { href: here, id: 'newest' }, 'Newest') : null,
      next ? h('a', { href: `${here}?cursor=${encodeURIComponent(next)}`, id: 'older' }, 'Older incidents →') : null,
    ),
  );
  showLinkedReport();
}
