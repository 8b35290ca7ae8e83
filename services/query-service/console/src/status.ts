import { publicStatusPage } from './status-pages.js';

// The public status page's entry: /status/{slug}, refreshed every minute.
const main = document.getElementById('main')!;
const slug = decodeURIComponent(location.pathname.split('/')[2] ?? '');
void publicStatusPage(main, slug);
setInterval(() => void publicStatusPage(main, slug), 60_000);
