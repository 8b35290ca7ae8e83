// NOTE: types only: the contract's index pulls in ajv, which the console's bundle must not.
import type { RunOnceResult } from '@telemetry/contract';
import { ApiError, call, type Problem } from './api.js';
import { failure, h, scroller, show, statusBadge, table } from './dom.js';

/**
 * "Run once now" on the monitor form: POST /api/monitors/run-once with the form's settings
 * (and the monitor's id when editing, so that masked secrets mean the stored ones); a
 * runner checks once and the answer shows here. Nothing is saved.
 *
 * Ids tests use: `#run-once` (the button), `#run-result` (what it answered), `#run-steps`
 * (the steps' timings), `#run-screenshot` (the page when a browser check failed).
 */

/** The runner's check has the monitor's timeout (at most 60 s) and the query service its own deadline: wait past both. */
const RUN_DEADLINE_MS = 90_000;
const PNG = 'data:image/png;base64,';

const ms = (v: number | undefined): string => (v === undefined ? '—' : `${Math.round(v * 10) / 10} ms`);

function facts(rows: [string, Node | string | number | null | undefined][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    rows
      .filter(([, v]) => v !== null && v !== undefined && v !== '')
      .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
  );
}

/** One run's answer: the verdict, what failed, the timings and the screenshot. */
export function runResult(r: RunOnceResult): HTMLElement {
  const t = r.timings ?? {};
  const steps = t.steps ?? [];
  const nav = t.navigation;
  const vitals = t.web_vitals;
  const packets = t.packets;
  return h(
    'div',
    { class: 'run-result' },
    h('h2', {}, 'Result of one run (not saved)'),
    facts([
      ['Status', statusBadge(r.status)],
      ['Response time', ms(r.response_time)],
      ['HTTP status', r.status_code ? r.status_code : null],
      ['Error', r.error],
      ['Detail', r.detail ? h('span', { class: 'detail' }, r.detail) : null],
      [
        'Certificate valid for',
        r.tls_days_left !== null && r.tls_days_left !== undefined ? `${r.tls_days_left} more days` : null,
      ],
      ['Location', r.location],
    ]),
    steps.length > 0
      ? scroller(
          'Steps of the run',
          table(
            { id: 'run-steps' },
            ['Step', 'Time', 'Result', 'HTTP'],
            steps.map((s) => [
              h('td', {}, s.name),
              h('td', { class: 'num' }, ms(s.duration_ms)),
              h('td', {}, statusBadge(s.ok ? 'up' : 'down'), s.ok ? '' : ' failed'),
              h('td', { class: 'num' }, s.status_code ?? '—'),
            ]),
          ),
        )
      : null,
    nav || vitals
      ? facts([
          ['Time to first byte', nav?.ttfb_ms !== undefined ? ms(nav.ttfb_ms) : null],
          ['DOM content loaded', nav?.dom_content_loaded_ms !== undefined ? ms(nav.dom_content_loaded_ms) : null],
          ['Load', nav?.load_ms !== undefined ? ms(nav.load_ms) : null],
          ['Largest contentful paint', vitals?.lcp_ms !== undefined ? ms(vitals.lcp_ms) : null],
          ['Cumulative layout shift', vitals?.cls !== undefined ? String(vitals.cls) : null],
          ['Interaction to next paint', vitals?.inp_ms !== undefined ? ms(vitals.inp_ms) : null],
        ])
      : null,
    packets
      ? facts([
          ['Packets', `${packets.received} of ${packets.sent} answered (${packets.loss_percent}% lost)`],
          [
            'Round trip (min / avg / max)',
            packets.rtt_avg_ms !== undefined
              ? `${ms(packets.rtt_min_ms)} / ${ms(packets.rtt_avg_ms)} / ${ms(packets.rtt_max_ms)}`
              : null,
          ],
        ])
      : null,
    // Only a PNG as a data: URL is shown (the page's CSP allows data: images, nothing else from elsewhere).
    typeof r.screenshot === 'string' && r.screenshot.startsWith(PNG)
      ? h(
          'figure',
          {},
          h('img', {
            id: 'run-screenshot',
            class: 'screenshot',
            src: r.screenshot,
            alt: 'The page when the check failed',
          }),
          h('figcaption', { class: 'muted' }, 'The page when the check failed'),
        )
      : null,
  );
}

/**
 * The button and the region its answer shows in. `settings` reads the form as Save sends it;
 * `problems` puts a VALIDATION_FAILED's problems next to the form's fields and returns those
 * no field shows.
 */
export function runOnce(
  monitorId: string | undefined,
  settings: () => Record<string, unknown>,
  problems: (list: Problem[]) => Problem[],
): { button: HTMLButtonElement; result: HTMLElement } {
  const result = h('section', { id: 'run-result', 'aria-live': 'polite', 'aria-label': 'Run once now' });
  const button = h('button', { type: 'button', id: 'run-once' }, 'Run once now');
  button.addEventListener('click', () => {
    button.disabled = true;
    show(result, h('p', { class: 'loading', role: 'status' }, 'Running the check once…'));
    const body = { settings: settings(), ...(monitorId ? { monitor_id: monitorId } : {}) };
    call<RunOnceResult>('POST', '/api/monitors/run-once', body, true, RUN_DEADLINE_MS).then(
      (r) => {
        button.disabled = false;
        problems([]);
        show(result, runResult(r.data));
        result.scrollIntoView({ block: 'nearest' });
      },
      (err: unknown) => {
        button.disabled = false;
        // The settings were checked as a create's: their problems' paths may say /settings/….
        const list = (err instanceof ApiError ? err.problems : []).map((p) => ({
          ...p,
          path: p.path.replace(/^\/settings(?=\/|$)/, ''),
        }));
        const rest = problems(list);
        const box = failure(err);
        if (rest.length > 0)
          box.append(
            h(
              'ul',
              {},
              rest.map((p) => h('li', {}, h('code', {}, p.path), ' ', p.message)),
            ),
          );
        show(result, box);
      },
    );
  });
  return { button, result };
}
