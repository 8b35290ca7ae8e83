import type { ChannelObject, ChannelTestResult, WebhookDelivery } from '@telemetry/contract';
import { call, get } from './api.js';
import { CHANNEL_TYPE_LABELS } from './channel-fields.js';
import { failure, h, loading, loadView, scroller, show, statusBadge, table, time } from './dom.js';
import { removeObject } from './form-kit.js';
import { guard, roleNote } from './guard.js';

// The channels page (list) and a channel's page (settings, Send test, delivery log, delete).

/** What a channel aims at, as the API shows it (secrets masked): `url: https://hooks.slack.com`. */
export function targetOf(c: ChannelObject): string {
  const parts: string[] = [];
  const walk = (prefix: string, v: unknown): void => {
    if (Array.isArray(v)) parts.push(`${prefix}: ${v.join(', ')}`);
    else if (typeof v === 'object' && v !== null)
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    else if (typeof v === 'string' && v.length > 80) parts.push(`${prefix}: ${v.slice(0, 77)}…`);
    else parts.push(`${prefix}: ${String(v)}`);
  };
  walk('', c.config);
  return parts.join(' · ');
}

function reminders(c: ChannelObject): string {
  return c.remind_every_seconds > 0 ? `every ${c.remind_every_seconds} s, at most ${c.remind_max}` : 'none';
}

/** The tenant's channels. */
export async function channelList(main: HTMLElement): Promise<void> {
  const channels = await loadView(
    main,
    'Alert channels',
    undefined,
    () => get<ChannelObject[]>('/api/channels'),
    () => void channelList(main),
  );
  if (!channels) return;
  show(
    main,
    h(
      'div',
      { class: 'title-row' },
      h('h1', {}, 'Alert channels'),
      h(
        'div',
        { class: 'actions' },
        guard(
          'channels:write',
          h('a', { class: 'button primary', id: 'new-channel', href: '#/channels/new' }, 'New channel'),
        ),
        h('a', { class: 'button', href: '#/escalation-policies' }, 'Escalation policies'),
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      'Where alerts go: choose channels (or an escalation policy) in a monitor’s settings. Secrets show masked.',
    ),
    channels.length === 0
      ? h('p', { class: 'empty' }, 'No channels yet.')
      : scroller(
          'Alert channels',
          table(
            { id: 'channels' },
            ['Name', 'Type', 'Target', 'On resolve', 'Reminders'],
            channels.map((c) => {
              const row = [
                h('td', {}, h('a', { href: `#/channels/${c.id}` }, c.name)),
                h('td', {}, CHANNEL_TYPE_LABELS[c.type]),
                h('td', { class: 'url' }, targetOf(c)),
                h('td', {}, c.send_resolved ? 'sends' : 'silent'),
                h('td', {}, reminders(c)),
              ];
              return row;
            }),
          ),
        ),
  );
  for (const [i, tr] of main.querySelectorAll('#channels tbody tr').entries())
    tr.setAttribute('data-channel', channels[i]!.id);
}

/** The provider's answer to a test send, in words. */
function testResult(r: ChannelTestResult): HTMLElement {
  return h(
    'div',
    { class: r.delivered ? 'result' : 'error' },
    h(
      'p',
      {},
      h('strong', {}, r.delivered ? 'Delivered. ' : 'Not delivered. '),
      r.status_code > 0 ? `The provider answered ${r.status_code}.` : 'The provider did not answer.',
      r.error ? ` Error: ${r.error}.` : '',
    ),
    r.response
      ? [h('p', {}, 'Its answer:'), h('pre', { class: 'response' }, r.response)]
      : h('p', { class: 'muted' }, 'Its answer was empty.'),
  );
}

function deliveryLog(deliveries: WebhookDelivery[]): HTMLElement {
  if (deliveries.length === 0) return h('p', { class: 'empty' }, 'Nothing sent through this channel yet.');
  return scroller(
    'Delivery log',
    table(
      { id: 'deliveries' },
      ['Time', 'Kind', 'Monitor', 'Attempt', 'Status', 'Status code', 'Error'],
      deliveries.map((d) => [
        h('td', {}, time(d.attempted_at.replace(/\.\d{3}Z$/, 'Z'))),
        h('td', {}, d.kind ?? d.alert_type),
        h('td', {}, d.monitor_id ? h('a', { href: `#/monitors/${d.monitor_id}` }, d.monitor_id) : '—'),
        h('td', { class: 'num' }, d.attempt),
        h('td', {}, statusBadge(d.status)),
        h('td', { class: 'num' }, d.status_code || '—'),
        h('td', {}, d.error ?? ''),
      ]),
    ),
  );
}

/** A channel: its settings, Send test with the provider's answer, its delivery log, edit and delete. */
export async function channelPage(main: HTMLElement, id: string, navigate: (hash: string) => void): Promise<void> {
  const c = await loadView(
    main,
    'Alert channel',
    undefined,
    () => get<ChannelObject>(`/api/channels/${id}`),
    () => void channelPage(main, id, navigate),
  );
  if (!c) return;
  const notice = h('div', { id: 'channel-notice' });
  const result = h('div', { id: 'test-result', role: 'status' });
  const log = h('div', { id: 'delivery-log' }, loading('Loading the delivery log…'));
  const refreshLog = async (): Promise<void> => {
    try {
      show(log, deliveryLog(await get<WebhookDelivery[]>(`/api/channels/${id}/deliveries?limit=50`)));
    } catch (err) {
      show(
        log,
        failure(err, () => void refreshLog()),
      );
    }
  };
  const sendTest = (button: HTMLButtonElement): void => {
    button.disabled = true;
    show(result, 'Sending a test notification…');
    call<ChannelTestResult>('POST', `/api/channels/${id}/test`).then(
      (r) => {
        button.disabled = false;
        show(result, testResult(r.data));
        void refreshLog();
      },
      (err: unknown) => {
        button.disabled = false;
        show(result, failure(err));
      },
    );
  };
  const remove = (): void =>
    removeObject(`channel “${c.name}”`, `/api/channels/${id}`, notice, () => navigate('#/channels'));
  const testButton = guard(
    'channels:write',
    h('button', { type: 'button', class: 'primary', id: 'test-channel' }, 'Send test'),
  );
  testButton.addEventListener('click', () => sendTest(testButton));
  show(
    main,
    h('p', {}, h('a', { href: '#/channels' }, '← All channels')),
    h(
      'div',
      { class: 'title-row' },
      h('h1', {}, c.name),
      h(
        'div',
        { class: 'actions' },
        testButton,
        guard('channels:write', h('a', { class: 'button', id: 'edit-channel', href: `#/channels/${id}/edit` }, 'Edit')),
        guard(
          'channels:write',
          h('button', { type: 'button', class: 'danger', id: 'delete-channel', onclick: remove }, 'Delete'),
        ),
      ),
    ),
    roleNote('channels:write'),
    notice,
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'Type'),
      h('dd', {}, CHANNEL_TYPE_LABELS[c.type]),
      h('dt', {}, 'Target'),
      h('dd', { class: 'url' }, targetOf(c)),
      h('dt', {}, 'On resolve'),
      h('dd', {}, c.send_resolved ? 'sends a resolved message' : 'sends nothing'),
      h('dt', {}, 'Reminders'),
      h('dd', {}, reminders(c)),
      h('dt', {}, 'Templates'),
      h(
        'dd',
        {},
        [c.templates.title ? 'own title' : '', c.templates.text ? 'own text' : ''].filter((t) => t).join(', ') ||
          'the defaults',
      ),
      h('dt', {}, 'Updated'),
      h('dd', {}, time(c.updated_at)),
    ),
    h(
      'section',
      { 'aria-labelledby': 'h-test' },
      h('h2', { id: 'h-test' }, 'Test'),
      h('p', { class: 'muted' }, 'Send test sends a test notification now and shows what the provider answered.'),
      result,
    ),
    h(
      'section',
      { 'aria-labelledby': 'h-log' },
      h('h2', { id: 'h-log' }, 'Delivery log'),
      h('button', { type: 'button', onclick: () => void refreshLog() }, 'Refresh the log'),
      log,
    ),
  );
  await refreshLog();
}
