import type { Check, Incident, Monitor, WebhookDelivery } from '@telemetry/contract';
import { ApiError, call, get } from './api.js';
import { lineChart } from './chart.js';
import { failure, h, loading, rangePicker, show, statusBadge, time } from './dom.js';
import { DAY, minuteBuckets, RANGES, summaryBuckets } from './monitor-data.js';
import { silenceNotice } from './monitor-alerting.js';
import { checkTable, deliveryTable, incidentList, statusBars } from './monitor-tables.js';
import { guard, roleNote } from './guard.js';

/** A monitor's page; refreshes itself every few seconds while shown. */
export async function monitorPage(
  main: HTMLElement,
  id: string,
  navigate: (hash: string) => void,
): Promise<() => void> {
  show(main, loading('Loading the monitor…'));
  let range: (typeof RANGES)[number] = RANGES[0];
  let stopped = false;
  const sections = {
    head: h('div'),
    chart: h('section', { 'aria-labelledby': 'h-chart' }),
    incidents: h('section', { 'aria-labelledby': 'h-incidents' }),
    checks: h('section', { 'aria-labelledby': 'h-checks' }),
    deliveries: h('section', { 'aria-labelledby': 'h-deliveries' }),
  };
  const notice = h('div', { role: 'status', class: 'notice' });
  // The range picker stays while the chart under it is redrawn (keyboard focus stays on it).
  const chartBody = h('div');
  show(
    sections.chart,
    h('h2', { id: 'h-chart' }, 'Response time'),
    rangePicker('range', RANGES, (r) => {
      range = r;
      show(chartBody, loading());
      void refresh();
    }),
    chartBody,
  );
  let monitor: Monitor | undefined;
  let incidents: Incident[] = [];
  /**
   * What an acknowledgement answered, by incident: shown until the incident list says the
   * same (it reads the acknowledgement a moment later).
   */
  const acks = new Map<string, Pick<Incident, 'acknowledged_at' | 'acknowledged_by'>>();
  const drawIncidents = (): void => {
    const shown = incidents.map((i) => {
      const a = acks.get(i.id);
      if (a && Boolean(i.acknowledged_at) === Boolean(a.acknowledged_at)) acks.delete(i.id);
      return a && acks.has(i.id) ? { ...i, ...a } : i;
    });
    show(sections.incidents, h('h2', { id: 'h-incidents' }, 'Incidents'), incidentList(shown, acknowledge));
  };
  const acknowledge = (i: Incident, ack: boolean): void =>
    void act(ack ? 'Acknowledging' : 'Taking back the acknowledgement', async () => {
      const r = await call<Partial<Incident> | null>(
        'POST',
        `/api/incidents/${i.id}/${ack ? 'acknowledge' : 'unacknowledge'}`,
      );
      acks.set(
        i.id,
        ack
          ? {
              acknowledged_at: r.data?.acknowledged_at ?? new Date().toISOString(),
              acknowledged_by: r.data?.acknowledged_by ?? null,
            }
          : { acknowledged_at: null, acknowledged_by: null },
      );
      drawIncidents();
    });

  const act = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
    show(notice, `${what}…`);
    try {
      await fn();
      show(notice, `${what}: done.`);
      await refresh();
    } catch (err) {
      show(notice, failure(err));
    }
  };
  const head = (m: Monitor): HTMLElement =>
    h(
      'div',
      { class: 'title-row' },
      h('h1', {}, m.name, ' ', statusBadge(m.status)),
      h(
        'div',
        { class: 'actions' },
        guard(
          'monitors:write',
          h('a', { class: 'button', id: 'edit-monitor', href: `#/monitors/${m.id}/edit` }, 'Edit'),
        ),
        guard(
          'monitors:write',
          h(
            'button',
            {
              type: 'button',
              id: 'pause-monitor',
              onclick: () =>
                void act(m.paused ? 'Resuming' : 'Pausing', () =>
                  call('PATCH', `/api/monitors/${m.id}`, { paused: !m.paused }),
                ),
            },
            m.paused ? 'Resume' : 'Pause',
          ),
        ),
        guard(
          'monitors:write',
          h(
            'button',
            {
              type: 'button',
              class: 'danger',
              id: 'delete-monitor',
              onclick: () => {
                if (!confirm(`Delete the monitor “${m.name}”? Its checks stop and its history is no longer shown.`))
                  return;
                void act('Deleting', async () => {
                  await call('DELETE', `/api/monitors/${m.id}`);
                  stopped = true;
                  navigate('#/');
                });
              },
            },
            'Delete',
          ),
        ),
      ),
      roleNote('monitors:write'),
    );

  const refresh = async (): Promise<void> => {
    if (stopped) return;
    try {
      const [m, buckets, listed, checks, deliveries] = await Promise.all([
        get<Monitor>(`/api/monitors/${id}`),
        range.id === '1h' ? minuteBuckets(id) : summaryBuckets(id, range.seconds),
        get<Incident[]>(`/api/monitors/${id}/incidents?limit=20`),
        get<Check[]>(`/api/monitors/${id}/checks?limit=20`),
        get<WebhookDelivery[]>(`/api/monitors/${id}/webhook-deliveries?limit=20`),
      ]);
      if (stopped) return;
      monitor = m;
      incidents = listed;
      show(
        sections.head,
        head(m),
        h(
          'p',
          { class: 'muted url' },
          m.type === 'heartbeat'
            ? `a call expected every ${m.interval_seconds} s (+ ${m.heartbeat_grace_seconds ?? 60} s grace) · last check `
            : `${m.type === 'http' ? `${m.method} ` : ''}${m.url} every ${m.interval_seconds} s from ${m.locations.join(', ')} · last check `,
          time(m.last_check_at),
        ),
        silenceNotice(m),
        m.heartbeat_token
          ? h(
              'p',
              { class: 'muted url' },
              'Your job calls POST /api/heartbeats/',
              h('code', { class: 'heartbeat-token' }, m.heartbeat_token),
              ' on the ingest gateway',
            )
          : null,
      );
      const unit = range.id === '1h' ? 'minute' : range.seconds <= 7 * DAY ? 'hour' : 'day';
      show(
        chartBody,
        lineChart(
          `p50 and p95 per ${unit}, ${range.label.toLowerCase()}`,
          'ms',
          buckets.map((b) => b.t),
          [
            { label: 'p50', values: buckets.map((b) => b.p50), color: '--series-1' },
            { label: 'p95', values: buckets.map((b) => b.p95), color: '--series-2' },
          ],
          [Math.floor(Date.now() / 1000) - range.seconds, Math.floor(Date.now() / 1000)],
        ),
        h('h3', {}, `Status per ${unit}`),
        buckets.length ? statusBars(buckets, unit) : h('p', { class: 'empty' }, 'No checks in this range yet.'),
      );
      drawIncidents();
      show(sections.checks, h('h2', { id: 'h-checks' }, 'Recent checks'), checkTable(checks));
      show(sections.deliveries, h('h2', { id: 'h-deliveries' }, 'Webhook deliveries'), deliveryTable(deliveries));
      if (!main.contains(sections.head)) {
        show(
          main,
          h('p', {}, h('a', { href: '#/' }, '← All monitors')),
          sections.head,
          notice,
          ...Object.values(sections).slice(1),
        );
      }
    } catch (err) {
      if (stopped) return;
      if (err instanceof ApiError && err.code === 'MONITOR_NOT_FOUND') {
        show(
          main,
          h('h1', {}, 'No such monitor'),
          h('p', {}, 'It was deleted, or never existed. ', h('a', { href: '#/' }, 'All monitors')),
        );
        stopped = true;
        return;
      }
      // Keep what is shown; say that it is stale.
      show(
        notice,
        failure(err, () => void refresh()),
      );
      if (!monitor)
        show(
          main,
          failure(err, () => void refresh()),
        );
    }
  };
  await refresh();
  const timer = setInterval(() => void refresh(), 3000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
