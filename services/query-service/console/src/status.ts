import { call } from './api.js';
import { failure, h, show } from './dom.js';
import type { PageAt } from './public-at.js';
import { subscriptionPage } from './public-follow.js';
import { historyPage } from './public-history.js';
import { publicStatusPage } from './public-page.js';

/**
 * The public status pages' entry: /status/{slug}, /status/{slug}/history and
 * /status/{slug}/subscription; on a page's custom domain the same at /, /history and
 * /subscription, the slug from GET /api/status-domain (which names the page of the Host).
 */
async function start(main: HTMLElement): Promise<void> {
  const parts = location.pathname.split('/').filter(Boolean);
  let at: PageAt;
  let rest: string | undefined;
  if (parts[0] === 'status' && parts[1]) {
    // A slug is letters, digits and hyphens: one written otherwise is no page (the API says so).
    const slug = parts[1];
    at = { slug, base: `/status/${encodeURIComponent(slug)}` };
    rest = parts[2];
  } else {
    try {
      at = { slug: (await call<{ slug: string }>('GET', '/api/status-domain', undefined, false)).data.slug, base: '' };
    } catch (err) {
      show(
        main,
        h('h1', {}, 'Status'),
        failure(err, () => void start(main)),
      );
      return;
    }
    rest = parts[0];
  }
  if (rest === 'history') await historyPage(main, at);
  else if (rest === 'subscription') await subscriptionPage(main, at);
  else await publicStatusPage(main, at);
}

void start(document.getElementById('main')!);
