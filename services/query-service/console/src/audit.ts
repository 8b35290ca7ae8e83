import { AUDIT_OUTCOMES, type AuditEntry } from '@telemetry/contract/access';
import { call } from './api.js';
import { failure, h, loading, scroller, show, time } from './dom.js';
import { field } from './people-form.js';

/**
 * #/audit (docs/console.md): the audit log newest first (time, actor, action, target,
 * outcome, and each changed field's before -> after), filters, and "Older" paging by the
 * API's next_cursor.
 *
 * Ids a test can find: form#audit-filters with #audit-action, #audit-actor,
 * #audit-target-type, #audit-target-id, #audit-outcome, #audit-from and #audit-to;
 * table#audit with tr[data-audit=ID] and its td.audit-action; button#audit-older.
 */

const FILTERS: [id: string, param: string][] = [
  ['audit-action', 'action'],
  ['audit-actor', 'actor'],
  ['audit-target-type', 'target_type'],
  ['audit-target-id', 'target_id'],
  ['audit-outcome', 'outcome'],
];

const shown = (v: unknown): string => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

function row(e: AuditEntry): HTMLElement {
  const changes = Object.entries(e.changes ?? {});
  return h(
    'tr',
    { 'data-audit': e.id },
    h('td', {}, time(e.at)),
    h('td', {}, e.actor.email || `${e.actor.type} ${e.actor.id}`),
    h('td', { class: 'audit-action' }, h('code', {}, e.action)),
    h('td', {}, `${e.target.type} ${e.target.id}`),
    h('td', {}, h('span', { class: `badge ${e.outcome === 'ok' ? 'up' : 'down'}` }, e.outcome)),
    h(
      'td',
      {},
      changes.length === 0
        ? '—'
        : h(
            'ul',
            { class: 'changes' },
            changes.map(([f, c]) => h('li', {}, h('code', {}, f), `: ${shown(c.before)} → ${shown(c.after)}`)),
          ),
    ),
  );
}

export function auditPage(main: HTMLElement): void {
  const body = h('tbody', {});
  const older = h('button', { type: 'button', id: 'audit-older', hidden: true }, 'Older');
  const status = h('div', { role: 'status' });
  const local = (id: string): string | null => {
    const v = form.querySelector<HTMLInputElement>(`#${id}`)?.value;
    return v ? new Date(v).toISOString() : null;
  };
  let query = '';
  let cursor: string | null = null;
  const load = async (more: boolean): Promise<void> => {
    show(status, loading('Reading the audit log…'));
    older.hidden = true;
    try {
      const q = new URLSearchParams(query);
      if (more && cursor) q.set('cursor', cursor);
      const page = await call<AuditEntry[]>('GET', `/api/audit?${q.toString()}`);
      if (!more) body.replaceChildren();
      body.append(...page.data.map(row));
      cursor = page.next_cursor ?? null;
      older.hidden = cursor === null;
      show(status, body.childElementCount === 0 ? h('p', { class: 'empty' }, 'No entries match.') : null);
    } catch (err) {
      show(
        status,
        failure(err, () => void load(more)),
      );
    }
  };
  const form = h(
    'form',
    { id: 'audit-filters', class: 'filters' },
    field('audit-action', 'Action', {}, 'monitor.update, member.role_change…'),
    field('audit-actor', 'Actor', {}, 'an email or id'),
    field('audit-target-type', 'Target type'),
    field('audit-target-id', 'Target id'),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'audit-outcome' }, 'Outcome'),
      h(
        'select',
        { id: 'audit-outcome' },
        h('option', { value: '' }, 'any'),
        AUDIT_OUTCOMES.map((o) => h('option', { value: o }, o)),
      ),
    ),
    field('audit-from', 'From', { type: 'datetime-local' }),
    field('audit-to', 'To', { type: 'datetime-local' }),
    h('button', { type: 'submit', class: 'primary' }, 'Show'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [id, param] of FILTERS) {
      const v = form.querySelector<HTMLInputElement | HTMLSelectElement>(`#${id}`)?.value.trim();
      if (v) q.set(param, v);
    }
    const from = local('audit-from');
    const to = local('audit-to');
    if (from) q.set('from', from);
    if (to) q.set('to', to);
    query = q.toString();
    void load(false);
  });
  older.addEventListener('click', () => void load(true));
  const grid = h(
    'table',
    { id: 'audit' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Time', 'Actor', 'Action', 'Target', 'Outcome', 'Changes'].map((c) => h('th', { scope: 'col' }, c)),
      ),
    ),
    body,
  );
  show(main, h('h1', {}, 'Audit log'), form, scroller('Audit log', grid), status, older);
  void load(false);
}
