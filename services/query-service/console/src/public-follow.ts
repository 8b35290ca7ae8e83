import type { PublicStatusPage } from '@telemetry/contract';
import { ApiError, call } from './api.js';
import { h, show } from './dom.js';
import { field, shownOnce, statusLine } from './people-form.js';
import { pageFailure, readPublicPage, type PageAt } from './public-at.js';
import { checkedValues, monitorChoices } from './follow-kit.js';

/**
 * Following a public page (docs/console.md, "Status pages people follow"): the subscribe
 * forms (email, webhook), the feeds and badges, and the page a mailed link opens to confirm
 * or unsubscribe. Ids a test can find: form#subscribe-email, form#subscribe-webhook,
 * #subscribe-email-status, #subscribe-webhook-status, a#feed-rss, a#feed-atom,
 * button#subscription-act, #subscription-result.
 */

const api = (at: PageAt, rest: string): string => `/api/status/${encodeURIComponent(at.slug)}${rest}`;

/** What a refused subscription says, in words (the envelope's message otherwise). */
function refusal(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  if (err.status === 429) {
    const minutes = Math.max(1, Math.ceil((err.retryAfter ?? 60) / 60));
    return `Too many subscription requests: try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
  }
  if (err.code === 'VALIDATION_FAILED') return err.problems.map((p) => `${p.path}: ${p.message}`).join('; ');
  return `${err.message} (${err.code})`;
}

/** The "Subscribe to updates" section of a page: which monitors, email, webhook, feeds and badges. */
export function followSection(page: PublicStatusPage, at: PageAt): HTMLElement {
  const monitors =
    page.monitors.length > 1
      ? monitorChoices(
          page.monitors,
          'f-follow',
          'follow-monitor',
          'Only about these monitors (none checked: the whole page)',
        )
      : null;
  const chosen = (): string[] => (monitors ? checkedValues(monitors, 'follow-monitor') : []);

  const emailStatus = statusLine('subscribe-email-status');
  const emailForm = h(
    'form',
    { id: 'subscribe-email', novalidate: true },
    field('subscribe-email-address', 'Email address', { type: 'email', autocomplete: 'email', required: true }),
    h('button', { type: 'submit', class: 'primary' }, 'Subscribe by email'),
    emailStatus,
  );
  emailForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const input = emailForm.querySelector('input')!;
    const ids = chosen();
    const body = { email: input.value.trim(), ...(ids.length ? { monitor_ids: ids } : {}) };
    show(emailStatus, 'Sending…');
    input.removeAttribute('aria-invalid');
    call('POST', api(at, '/subscribers'), body, false).then(
      // The same answer whether the address is new, waiting for its confirmation or
      // subscribed already: nobody learns from it who follows the page.
      () => {
        show(emailStatus, 'Check your email to confirm: the link in it starts the subscription.');
        input.value = '';
      },
      (err: unknown) => {
        if (err instanceof ApiError && err.problems.some((p) => p.path === '/email')) {
          input.setAttribute('aria-invalid', 'true');
          show(emailStatus, 'Enter an email address, like name@example.com.');
        } else show(emailStatus, refusal(err));
      },
    );
  });

  const hookStatus = statusLine('subscribe-webhook-status');
  const hookForm = h(
    'form',
    { id: 'subscribe-webhook', novalidate: true },
    field(
      'subscribe-webhook-url',
      'Webhook URL',
      { type: 'url', required: true },
      'It first gets a signed verification request with a challenge: answer 2xx with the challenge ' +
        '(the whole body, or JSON {"challenge": "…"}) within a few seconds.',
    ),
    h('button', { type: 'submit' }, 'Subscribe the webhook'),
    hookStatus,
  );
  hookForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const input = hookForm.querySelector('input')!;
    const ids = chosen();
    show(hookStatus, 'Verifying the URL…');
    call<{ secret: string }>(
      'POST',
      api(at, '/subscribers'),
      { webhook: input.value.trim(), ...(ids.length ? { monitor_ids: ids } : {}) },
      false,
    ).then(
      ({ data }) => {
        input.value = '';
        show(
          hookStatus,
          h('p', {}, 'Subscribed. Check the X-Telemetry-Signature of each call with its signing secret:'),
          shownOnce('subscribe-webhook-secret', 'Signing secret', data.secret),
        );
      },
      (err: unknown) => {
        const reason = err instanceof ApiError ? err.details.reason : undefined;
        show(hookStatus, refusal(err), typeof reason === 'string' ? ` ${reason}` : '');
      },
    );
  });

  return h(
    'section',
    { 'aria-labelledby': 'h-follow', id: 'follow' },
    h('h2', { id: 'h-follow' }, 'Subscribe to updates'),
    h(
      'p',
      {},
      'Be told when an incident is reported or updated, and when maintenance is scheduled or starts. ' +
        'Every email has a link to unsubscribe.',
    ),
    monitors,
    h('div', { class: 'follow-forms' }, emailForm, hookForm),
    h('h3', {}, 'Feeds'),
    h(
      'p',
      {},
      h('a', { id: 'feed-rss', href: `${at.base}/feed.rss`, type: 'application/rss+xml' }, 'RSS feed'),
      ' · ',
      h('a', { id: 'feed-atom', href: `${at.base}/feed.atom`, type: 'application/atom+xml' }, 'Atom feed'),
    ),
    h('h3', {}, 'Badges'),
    h(
      'p',
      {},
      'Each monitor has SVG badges for a README: ',
      h('code', {}, `${location.origin}${at.base}/badges/{monitor id}/uptime.svg`),
      ' (also status.svg and response-time.svg).',
    ),
  );
}

/**
 * /status/{slug}/subscription#confirm=TOKEN or #unsubscribe=TOKEN, the page a mailed link
 * opens: one button that POSTs. Opening it changes nothing, so a mail scanner that follows
 * links neither confirms nor unsubscribes anybody; the token stays in the fragment, which
 * no request carries.
 */
export async function subscriptionPage(main: HTMLElement, at: PageAt): Promise<void> {
  let title: string;
  try {
    title = (await readPublicPage(at)).title;
  } catch (err) {
    pageFailure(main, err, () => void subscriptionPage(main, at));
    return;
  }
  document.title = `${title}: subscription`;
  const params = new URLSearchParams(location.hash.slice(1));
  const confirm = params.get('confirm');
  const unsubscribe = params.get('unsubscribe');
  const back = h('p', {}, h('a', { href: at.base || '/' }, `← ${title}`));
  if (!confirm && !unsubscribe) {
    show(
      main,
      h('h1', {}, `${title}: subscription`),
      h('p', {}, 'This page confirms a subscription, or ends one, from the link in an email.'),
      back,
    );
    return;
  }
  const result = h('div', { id: 'subscription-result', role: 'status' });
  const button = h(
    'button',
    { type: 'button', class: 'primary', id: 'subscription-act' },
    confirm ? 'Confirm my subscription' : 'Unsubscribe',
  );
  button.addEventListener('click', () => {
    button.disabled = true;
    const [path, body] = confirm
      ? [api(at, '/subscribers/confirm'), { token: confirm }]
      : [api(at, '/unsubscribe'), { token: unsubscribe }];
    call('POST', path, body, false).then(
      () => {
        // Done: the link's token leaves the address bar (and the tab's history).
        history.replaceState(null, '', location.pathname);
        button.remove();
        show(
          result,
          h(
            'p',
            {},
            confirm
              ? `You are subscribed to ${title}. Every email has a link to unsubscribe.`
              : `You are unsubscribed from ${title}: no more emails.`,
          ),
        );
      },
      (err: unknown) => {
        button.disabled = false;
        show(
          result,
          h(
            'p',
            { class: 'error' },
            err instanceof ApiError && err.code === 'SUBSCRIPTION_LINK_INVALID'
              ? 'This link does not work: it expired, was used already, or is for another page. Subscribe again on the page.'
              : refusal(err),
          ),
        );
      },
    );
  });
  show(
    main,
    h('h1', {}, confirm ? `Confirm your subscription to ${title}` : `Unsubscribe from ${title}`),
    h(
      'p',
      {},
      confirm
        ? 'You (or someone with your address) asked to be emailed about this status page.'
        : 'You will get no more emails about this status page.',
    ),
    button,
    result,
    back,
  );
}
