import type { PublicStatusPage } from '@telemetry/contract';
import { ApiError, call } from './api.js';
import { failure, h, show } from './dom.js';

/**
 * Where a public page lives: its slug, and the path its pages hang from (`/status/{slug}`,
 * or '' on the page's custom domain, where `/history` is its history).
 */
export interface PageAt {
  slug: string;
  base: string;
}

/** GET /api/status/{slug} (public: no key). */
export async function readPublicPage(at: PageAt): Promise<PublicStatusPage> {
  return (await call<PublicStatusPage>('GET', `/api/status/${encodeURIComponent(at.slug)}`, undefined, false)).data;
}

/** "No such status page", or the failure with a retry. */
export function pageFailure(main: HTMLElement, err: unknown, retry: () => void): void {
  if (err instanceof ApiError && err.code === 'STATUS_PAGE_NOT_FOUND') {
    show(main, h('h1', {}, 'No such status page'), h('p', {}, 'Check the address, or ask whoever gave it to you.'));
  } else {
    show(main, h('h1', {}, 'Status'), failure(err, retry));
  }
}
