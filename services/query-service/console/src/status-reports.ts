import { REPORT_IMPACTS, REPORT_STATES, type StatusReportView } from '@telemetry/contract';
import type { Incident } from '@telemetry/contract';
import { ApiError, call, get } from './api.js';
import { failure, h, loading, show, time } from './dom.js';
import { checkedValues, monitorChoices, type PageContext } from './follow-kit.js';
import { fieldBlock, placeProblems, problemSummary, readField, type FieldSpec } from './form-kit.js';
import { guard, guardForm } from './guard.js';
import { onSubmit, statusLine } from './people-form.js';
import { IMPACT_LABELS, impactBadge, STATE_LABELS, stateBadge, updateList } from './public-reports.js';

/**
 * A status page's reports in the console (docs/console.md, "Status pages people follow"):
 * a new report (published at once, or a draft), a draft started from an open incident of a
 * monitor of the page, and per report its updates, "Post update", "Publish" and "Delete".
 * Ids a test can find: form#report-form (#f-title, #f-impact, #f-state, #f-message,
 * input[name=report-monitor], button#publish-report, button#save-draft, #report-status);
 * #from-incident li[data-incident] with button.start-report; article.report[data-report=ID]
 * with button.publish-report, button.delete-report and form.update-form (its select
 * `New state`, textarea `Update message`, button `Post update`).
 */

const states = REPORT_STATES.map((s) => ({ value: s, text: STATE_LABELS[s] }));
const FIELDS: FieldSpec[] = [
  { pointer: '/title', label: 'Title', kind: 'text', required: true, maxLength: 200 },
  {
    pointer: '/impact',
    label: 'Impact',
    kind: 'select',
    options: REPORT_IMPACTS.map((i) => ({ value: i, text: IMPACT_LABELS[i] })),
  },
  { pointer: '/state', label: 'State', kind: 'select', options: states },
  { pointer: '/message', label: 'Message', kind: 'textarea', required: true, maxLength: 5000 },
];

export function reportsSection(ctx: PageContext): HTMLElement {
  const list = h('div', { id: 'report-list' }, loading('Loading the reports…'));
  const incidents = h('div', { id: 'from-incident' });
  const redrawList = (): void => void drawReports(ctx, list);
  redrawList();
  void drawIncidents(ctx, incidents, redrawList);
  return h(
    'section',
    { id: 'reports', 'aria-labelledby': 'h-reports' },
    h('h2', { id: 'h-reports' }, 'Reports'),
    newReportForm(ctx, redrawList),
    incidents,
    h('h3', {}, 'Reports of this page'),
    list,
  );
}

function newReportForm(ctx: PageContext, done: () => void): HTMLFormElement {
  const status = statusLine('report-status');
  const form = h(
    'form',
    { id: 'report-form', novalidate: true },
    h('h3', {}, 'New report'),
    fieldBlock(FIELDS[0]!, ''),
    fieldBlock(FIELDS[1]!, 'major'),
    monitorChoices(ctx.monitors, 'f-monitor_ids', 'report-monitor', 'Affected monitors (none checked: the whole page)'),
    fieldBlock(FIELDS[2]!, 'investigating'),
    fieldBlock(FIELDS[3]!, ''),
    status,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', id: 'publish-report' }, 'Publish report'),
      h('button', { type: 'submit', id: 'save-draft' }, 'Save as draft'),
    ),
  );
  let draft = false;
  // Which of the two buttons sent the form (Enter in the title publishes).
  form.addEventListener('click', (e) => {
    if (e.target instanceof HTMLButtonElement) draft = e.target.id === 'save-draft';
  });
  onSubmit(form, status, async () => {
    const body: Record<string, unknown> = { monitor_ids: checkedValues(form, 'report-monitor'), draft };
    for (const f of FIELDS) {
      const v = readField(form, f);
      if (v !== undefined) body[f.pointer.slice(1)] = v;
    }
    draft = false;
    try {
      const r = await call<StatusReportView>('POST', `${ctx.api}/reports`, body);
      placeProblems(form, [...FIELDS.map((f) => f.pointer), '/monitor_ids'], []);
      form.reset();
      show(status, r.data.draft ? `Draft “${r.data.title}” saved.` : `“${r.data.title}” is published.`);
      done();
    } catch (err) {
      const rest = placeProblems(
        form,
        [...FIELDS.map((f) => f.pointer), '/monitor_ids'],
        err instanceof ApiError ? err.problems : [],
      );
      show(status, problemSummary(err, rest));
    }
  });
  return guardForm('monitors:write', form);
}

/** The open incidents of the page's monitors, each with "Start a report" (a draft). */
async function drawIncidents(ctx: PageContext, box: HTMLElement, done: () => void): Promise<void> {
  const open = (
    await Promise.all(
      ctx.monitors.map((m) =>
        get<Incident[]>(`/api/monitors/${encodeURIComponent(m.id)}/incidents?status=open&limit=5`).then(
          (list) => list.map((i) => ({ incident: i, monitor: m.name })),
          // A monitor whose incidents cannot be read offers none; the rest still show.
          () => [],
        ),
      ),
    )
  ).flat();
  if (open.length === 0) {
    show(box);
    return;
  }
  const status = statusLine('from-incident-status');
  const start = (id: string, button: HTMLButtonElement): void => {
    button.disabled = true;
    call<StatusReportView>('POST', `${ctx.api}/reports/from-incident`, { incident_id: id }).then(
      (r) => {
        button.disabled = false;
        show(status, `Draft “${r.data.title}” started: edit it below, then publish it.`);
        done();
      },
      (err: unknown) => {
        button.disabled = false;
        show(status, failure(err));
      },
    );
  };
  show(
    box,
    h('h3', {}, 'Open incidents of its monitors'),
    h(
      'ul',
      { class: 'incidents' },
      open.map(({ incident, monitor }) => {
        const button = h('button', { type: 'button', class: 'start-report' }, `Start a report on ${monitor}`);
        button.addEventListener('click', () => start(incident.id, button));
        return h(
          'li',
          { 'data-incident': incident.id },
          `${monitor} is down since `,
          time(incident.started_at),
          ' ',
          guard('monitors:write', button),
        );
      }),
    ),
    status,
  );
}

async function drawReports(ctx: PageContext, list: HTMLElement): Promise<void> {
  let reports: StatusReportView[];
  try {
    reports = await get<StatusReportView[]>(`${ctx.api}/reports?limit=50`);
  } catch (err) {
    show(
      list,
      failure(err, () => void drawReports(ctx, list)),
    );
    return;
  }
  const redraw = (): void => void drawReports(ctx, list);
  show(
    list,
    reports.length === 0
      ? h('p', { class: 'empty' }, 'No reports yet.')
      : reports.map((r) => reportCard(ctx, r, redraw)),
  );
}

function reportCard(ctx: PageContext, r: StatusReportView, redraw: () => void): HTMLElement {
  const path = `${ctx.api}/reports/${encodeURIComponent(r.id)}`;
  const notice = statusLine(`report-notice-${r.id}`);
  const act = (method: string, sub: string, body?: unknown): void => {
    call(method, `${path}${sub}`, body).then(redraw, (err: unknown) => show(notice, failure(err)));
  };
  const names = new Map(ctx.monitors.map((m) => [m.id, m.name]));
  const publish = h(
    'button',
    { type: 'button', class: 'primary publish-report', 'aria-label': `Publish ${r.title}` },
    'Publish',
  );
  publish.addEventListener('click', () => act('PATCH', '', { draft: false }));
  const remove = h(
    'button',
    { type: 'button', class: 'danger delete-report', 'aria-label': `Delete ${r.title}` },
    'Delete',
  );
  remove.addEventListener('click', () => {
    if (confirm(`Delete the report “${r.title}” and its updates? Subscribers are not told.`)) act('DELETE', '');
  });
  return h(
    'article',
    { class: `report${r.draft ? ' draft' : ''}`, 'data-report': r.id },
    h('h4', {}, r.title, r.draft ? [' ', h('span', { class: 'badge draft' }, 'Draft')] : null),
    h(
      'p',
      { class: 'report-meta' },
      stateBadge(r.state),
      ' ',
      impactBadge(r.impact),
      ` Affects ${r.monitor_ids.map((id) => names.get(id) ?? id).join(', ') || 'the whole page'}.`,
      r.incident_id ? ' Started from an incident.' : null,
      ' Updated ',
      time(r.updated_at),
      '.',
    ),
    updateList(r.updates),
    h('div', { class: 'actions' }, r.draft ? guard('monitors:write', publish) : null, guard('monitors:write', remove)),
    notice,
    updateForm(r, path, redraw),
  );
}

function updateForm(r: StatusReportView, path: string, redraw: () => void): HTMLFormElement {
  const id = (what: string): string => `u-${what}-${r.id}`;
  const status = statusLine(id('status'));
  const form = h(
    'form',
    { class: 'update-form', novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: id('state') }, 'New state'),
      h(
        'select',
        { id: id('state') },
        states.map((s) => h('option', { value: s.value, selected: s.value === r.state }, s.text)),
      ),
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: id('message') }, 'Update message'),
      h('textarea', { id: id('message'), rows: 3, maxlength: 5000, required: true }),
    ),
    status,
    h('button', { type: 'submit' }, 'Post update'),
  );
  onSubmit(form, status, async () => {
    const state = form.querySelector<HTMLSelectElement>('select')!.value;
    const message = form.querySelector<HTMLTextAreaElement>('textarea')!.value;
    await call('POST', `${path}/updates`, { state, message });
    redraw();
  });
  return guardForm('monitors:write', form);
}
