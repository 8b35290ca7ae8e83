import type { Response } from 'express';

/**
 * The acknowledge link's pages (GET and POST /ack/{token}): plain HTML in the look of the
 * console's public status pages (its own stylesheet, same origin), no script, and the
 * console's Content-Security-Policy: a monitor's name is shown escaped and could run
 * nothing anyway.
 */

const CSP =
  "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** One paragraph of text, escaped. */
export type Line = string;

export interface AckPage {
  status: number;
  title: string;
  lines: readonly Line[];
  /** A form whose button POSTs here (the confirmation page only). */
  formAction?: string;
}

export function sendAckPage(res: Response, page: AckPage): void {
  const form =
    page.formAction === undefined
      ? ''
      : `<form method="post" action="${escapeHtml(page.formAction)}">` +
        '<button type="submit" class="button primary">Acknowledge</button></form>';
  const html = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8" />',
    '<meta name="viewport" content="width=device-width, initial-scale=1" />',
    '<meta name="color-scheme" content="light dark" />',
    '<meta name="robots" content="noindex" />',
    `<title>${escapeHtml(page.title)}</title>`,
    '<link rel="icon" href="/console/icon.svg" type="image/svg+xml" />',
    '<link rel="stylesheet" href="/console/console.css" />',
    '</head>',
    '<body class="public">',
    '<main id="main">',
    `<h1>${escapeHtml(page.title)}</h1>`,
    ...page.lines.map((l) => `<p>${escapeHtml(l)}</p>`),
    form,
    '</main>',
    '</body>',
    '</html>',
  ].join('\n');
  res.status(page.status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Content-Security-Policy', CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // The token is the credential: never sent on to another site, never kept by a cache.
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Cache-Control', 'no-store');
  res.send(html);
}
