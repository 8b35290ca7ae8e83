import type { Check, Incident, WebhookDelivery } from '@telemetry/contract';
import { h, scroller, statusBadge, table, time } from './dom.js';
import type { Bucket } from './monitor-data.js';
import { guard } from './guard.js';

// The monitor page's tables and lists: status bars, incidents, checks, webhook deliveries.

export function statusBars(buckets: Bucket[], unit: string): HTMLElement {
  const down = buckets.filter((b) => b.down > 0).length;
  return h(
    'ol',
    { class: 'bars', 'aria-label': `${buckets.length} ${unit}s with checks, ${down} with failures` },
    buckets.map((b) => {
      const cls = b.down === 0 ? 'up' : b.down === b.checks ? 'down' : 'partial';
      const when = new Date(b.t * 1000).toISOString().replace('.000Z', 'Z');
      return h('li', { class: cls, title: `${when}: ${b.checks} checks, ${b.down} down` });
    }),
  );
}

/** Acknowledge (`true`) or take back (`false`) an open incident. */
export type Acknowledge = (incident: Incident, acknowledge: boolean) => void;

export function incidentList(incidents: Incident[], acknowledge?: Acknowledge): HTMLElement {
  if (incidents.length === 0) return h('p', { class: 'empty' }, 'No incidents.');
  return h(
    'ol',
    { class: 'timeline' },
    incidents.map((i) =>
      h(
        'li',
        { class: `incident ${i.status}`, 'data-incident': i.id },
        h('span', { class: `badge ${i.status === 'open' ? 'down' : 'up'}` }, i.status === 'open' ? 'open' : 'resolved'),
        ' Down since ',
        time(i.started_at),
        i.resolved_at ? [' until ', time(i.resolved_at)] : null,
        ` (${formatDuration(i.duration_seconds)}). Cause: `,
        [i.cause.status_code ? `HTTP ${i.cause.status_code}` : '', i.cause.error ?? ''].filter((c) => c).join(', ') ||
          'unknown',
        i.maintenance ? ' In a maintenance window: nobody was paged.' : '',
        i.acknowledged_at
          ? h(
              'span',
              { class: 'acknowledged' },
              ` Acknowledged by ${i.acknowledged_by ?? 'someone'} at `,
              time(i.acknowledged_at),
              '.',
            )
          : null,
        acknowledge && i.status === 'open'
          ? [
              ' ',
              guard(
                'monitors:write',
                h(
                  'button',
                  { type: 'button', class: 'acknowledge', onclick: () => acknowledge(i, !i.acknowledged_at) },
                  i.acknowledged_at ? 'Un-acknowledge' : 'Acknowledge',
                ),
              ),
            ]
          : null,
      ),
    ),
  );
}

function formatDuration(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function checkTable(checks: Check[]): HTMLElement {
  if (checks.length === 0) return h('p', { class: 'empty' }, 'No checks yet.');
  return scroller(
    'Recent checks',
    table(
      { id: 'checks' },
      ['Time', 'Status', 'Response', 'HTTP', 'Error', 'Detail'],
      checks.map((c) => [
        h('td', {}, time(c.created_at)),
        h('td', {}, statusBadge(c.status)),
        h('td', { class: 'num' }, `${c.response_time.toFixed(1)} ms`),
        h('td', { class: 'num' }, c.status_code || '—'),
        h('td', {}, c.error ?? ''),
        // What failed, in words (a failed assertion and the value seen): text, never markup.
        h('td', { class: 'detail' }, c.detail ?? ''),
      ]),
    ),
  );
}

export function deliveryTable(deliveries: WebhookDelivery[]): HTMLElement {
  if (deliveries.length === 0) return h('p', { class: 'empty' }, 'No webhook deliveries.');
  return scroller(
    'Webhook deliveries',
    table(
      {},
      ['Time', 'Alert', 'URL', 'Attempt', 'Result'],
      deliveries.map((d) => [
        h('td', {}, time(d.attempted_at.replace(/\.\d{3}Z$/, 'Z'))),
        h('td', {}, d.alert_type),
        h('td', { class: 'url' }, d.url),
        h('td', { class: 'num' }, d.attempt),
        h('td', {}, d.status, d.status_code ? ` (HTTP ${d.status_code})` : '', d.error ? ` ${d.error}` : ''),
      ]),
    ),
  );
}
