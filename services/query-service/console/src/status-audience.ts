import type { DomainView, SubscriberView } from '@telemetry/contract';
import { ApiError, call } from './api.js';
import { failure, h, scroller, show, table, time } from './dom.js';
import { loadedSection, type PageContext } from './follow-kit.js';
import { guard, guardForm } from './guard.js';
import { copyButton, field, onSubmit, statusLine, value } from './people-form.js';

/**
 * Who follows a status page, and where it answers (docs/console.md, "Status pages people
 * follow"): its subscribers (emails, and webhooks by origin only), its custom domains with
 * the TXT record each needs, and the badge Markdown of each monitor. Ids a test can find:
 * #subscriber-count, table#subscribers-table tr[data-subscriber=ID] button.subscriber-remove;
 * form#domain-form (#domain-hostname, #domain-status), table#domains-table
 * tr[data-domain=HOST] (button.domain-verify, button.domain-remove); textarea#badge-md-ID.
 */

/** Pages of subscribers read for the list (the API's pages; beyond these the count says "more than"). */
const MAX_SUBSCRIBER_PAGES = 10;

export function subscribersSection(ctx: PageContext): HTMLElement {
  return loadedSection('subscribers', 'Subscribers', async (body, redraw) => {
    const all: SubscriberView[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await call<SubscriberView[]>(
        'GET',
        `${ctx.api}/subscribers${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      all.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor && ++pages < MAX_SUBSCRIBER_PAGES);
    const names = new Map(ctx.monitors.map((m) => [m.id, m.name]));
    const emails = all.filter((s) => s.kind === 'email');
    const pending = emails.filter((s) => s.state === 'pending').length;
    const notice = statusLine('subscribers-notice');
    const remove = (s: SubscriberView): void => {
      if (!confirm(`Remove the subscriber ${s.address}? They are not told.`)) return;
      call('DELETE', `${ctx.api}/subscribers/${encodeURIComponent(s.id)}`).then(redraw, (err: unknown) =>
        show(notice, failure(err)),
      );
    };
    const list = table(
      { id: 'subscribers-table' },
      ['Address', 'By', 'State', 'About', 'Since', ''],
      all.map((s) => [
        h('td', {}, s.address),
        h('td', {}, s.kind),
        h('td', {}, s.state === 'pending' ? 'waiting for confirmation' : 'active'),
        h('td', {}, s.monitor_ids.map((id) => names.get(id) ?? id).join(', ') || 'the whole page'),
        h('td', {}, time(s.confirmed_at ?? s.created_at)),
        h(
          'td',
          {},
          guard(
            'monitors:write',
            h(
              'button',
              {
                type: 'button',
                class: 'danger subscriber-remove',
                'aria-label': `Remove ${s.address}`,
                onclick: () => remove(s),
              },
              'Remove',
            ),
          ),
        ),
      ]),
    );
    list.querySelectorAll('tbody tr').forEach((tr, i) => tr.setAttribute('data-subscriber', all[i]!.id));
    show(
      body,
      h(
        'p',
        { id: 'subscriber-count' },
        `${cursor ? 'More than ' : ''}${all.length} subscriber${all.length === 1 ? '' : 's'}: ` +
          `${emails.length} by email (${pending} waiting for confirmation), ${all.length - emails.length} by webhook. ` +
          'Feed readers are not counted: feeds need no subscription.',
      ),
      notice,
      all.length ? scroller('Subscribers', list) : null,
    );
  });
}

export function domainsSection(ctx: PageContext): HTMLElement {
  return loadedSection('domains', 'Custom domains', async (body, redraw) => {
    const domains = (await call<DomainView[]>('GET', `${ctx.api}/domains`)).data;
    const status = statusLine('domain-status');
    const form = h(
      'form',
      { id: 'domain-form' },
      field(
        'domain-hostname',
        'Host name',
        { required: true, autocomplete: 'off', placeholder: 'status.example.com' },
        'Add it, publish its TXT record at your DNS provider, then Verify. Point the name at this service and give it TLS at your ingress.',
      ),
      status,
      h('button', { type: 'submit' }, 'Add domain'),
    );
    onSubmit(form, status, async () => {
      await call('POST', `${ctx.api}/domains`, { hostname: value(form, 'domain-hostname').toLowerCase() });
      redraw();
    });
    const act = (d: DomainView, method: string, sub: string): void => {
      if (method === 'DELETE' && !confirm(`Remove ${d.hostname}? The page stops answering on it.`)) return;
      show(status);
      call(method, `${ctx.api}/domains/${encodeURIComponent(d.hostname)}${sub}`).then(redraw, (err: unknown) =>
        show(
          status,
          err instanceof ApiError && err.code === 'DOMAIN_NOT_VERIFIED'
            ? h('p', { class: 'error', role: 'alert' }, `${d.hostname}: ${err.message} (${err.code})`)
            : failure(err),
        ),
      );
    };
    const rows = table(
      { id: 'domains-table' },
      ['Host name', 'TXT record to publish', 'Verified', ''],
      domains.map((d) => [
        h('td', {}, d.hostname),
        h('td', {}, h('code', {}, d.txt_name), ' TXT ', h('code', { class: 'txt-value' }, d.txt_value)),
        h('td', {}, d.verified ? ['yes, ', time(d.verified_at)] : 'not yet'),
        h(
          'td',
          { class: 'actions' },
          d.verified
            ? null
            : guard(
                'monitors:write',
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'domain-verify',
                    'aria-label': `Verify ${d.hostname}`,
                    onclick: () => act(d, 'POST', '/verify'),
                  },
                  'Verify',
                ),
              ),
          guard(
            'monitors:write',
            h(
              'button',
              {
                type: 'button',
                class: 'danger domain-remove',
                'aria-label': `Remove ${d.hostname}`,
                onclick: () => act(d, 'DELETE', ''),
              },
              'Remove',
            ),
          ),
        ),
      ]),
    );
    rows.querySelectorAll('tbody tr').forEach((tr, i) => tr.setAttribute('data-domain', domains[i]!.hostname));
    show(
      body,
      domains.length ? scroller('Custom domains', rows) : h('p', { class: 'empty' }, 'No custom domains.'),
      guardForm('monitors:write', form),
    );
  });
}

/** Markdown text: `[`, `]` and `\` of a name escaped, so that it stays an image's alt text. */
const md = (s: string): string => s.replace(/[[\]\\]/g, '\\$&');

/** Each monitor's badges, shown and as Markdown to paste into a README. */
export function badgesSection(ctx: PageContext): HTMLElement {
  const page = `${location.origin}/status/${encodeURIComponent(ctx.slug)}`;
  return h(
    'section',
    { id: 'badges', 'aria-labelledby': 'h-badges' },
    h('h2', { id: 'h-badges' }, 'Badges'),
    h('p', {}, 'Paste a monitor’s Markdown into a README: its status and 30-day uptime, linked to this page.'),
    ctx.monitors.map((m) => {
      const base = `${page}/badges/${encodeURIComponent(m.id)}`;
      const text =
        `[![${md(m.name)} status](${base}/status.svg)](${page}) ` +
        `[![${md(m.name)} uptime](${base}/uptime.svg?window=30d)](${page})`;
      const id = `badge-md-${m.id}`;
      const area = h('textarea', { id, readonly: true, rows: 4, spellcheck: 'false' }, text);
      return h(
        'div',
        { class: 'badge-md', 'data-monitor': m.id },
        h('h3', {}, m.name),
        h(
          'p',
          { class: 'badge-preview' },
          h('img', { src: `${base}/status.svg`, alt: `${m.name} status` }),
          ' ',
          h('img', { src: `${base}/uptime.svg?window=30d`, alt: `${m.name} uptime` }),
        ),
        h('label', { for: id }, `Markdown for ${m.name}`),
        area,
        copyButton(area, text, { 'aria-label': `Copy the Markdown for ${m.name}` }),
      );
    }),
  );
}
