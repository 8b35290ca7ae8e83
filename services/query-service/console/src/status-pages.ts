import type { Monitor, StatusPage } from '@telemetry/contract';
import { ApiError, call, get } from './api.js';
import { failure, h, loadView, show, time } from './dom.js';
import { guard, roleNote } from './guard.js';

/** The owner's status pages: list, create, delete; each links to its reports, subscribers and domains (status-page-admin.ts). */
export async function statusPagesView(main: HTMLElement): Promise<void> {
  const loaded = await loadView(
    main,
    'Status pages',
    undefined,
    () => Promise.all([get<StatusPage[]>('/api/status-pages'), get<Monitor[]>('/api/monitors?limit=1000')]),
    () => void statusPagesView(main),
  );
  if (!loaded) return;
  const [pages, monitors] = loaded;
  const names = new Map(monitors.map((m) => [m.id, m.name]));
  const errors = h('div', { role: 'alert', id: 'page-form-error' });
  const fieldError = (name: string): HTMLElement => h('span', { id: `e-${name}`, class: 'field-error' });
  const form = h(
    'form',
    { novalidate: true, class: 'page-form' },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'p-slug' }, 'Slug (the page is /status/slug)'),
      h('input', { id: 'p-slug', name: 'slug', required: true, 'aria-describedby': 'e-slug' }),
      fieldError('slug'),
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'p-title' }, 'Title'),
      h('input', { id: 'p-title', name: 'title', required: true, 'aria-describedby': 'e-title' }),
      fieldError('title'),
    ),
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'p-description' }, 'Description'),
      h('textarea', { id: 'p-description', name: 'description', rows: 2 }),
    ),
    h(
      'fieldset',
      { 'aria-describedby': 'e-monitor_ids' },
      h('legend', {}, 'Monitors shown (names and status only: never URLs, headers or errors)'),
      monitors.map((m) =>
        h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'monitor_ids', value: m.id }), ' ', m.name),
      ),
      fieldError('monitor_ids'),
    ),
    errors,
    guard(
      'monitors:write',
      h('button', { type: 'submit', class: 'primary', id: 'publish-status-page' }, 'Publish page'),
    ),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const text = (name: string): string => {
      const v = data.get(name);
      return typeof v === 'string' ? v.trim() : '';
    };
    const description = text('description');
    const body = {
      slug: text('slug'),
      title: text('title'),
      ...(description ? { description } : {}),
      monitor_ids: data.getAll('monitor_ids').map(String),
    };
    call<StatusPage>('POST', '/api/status-pages', body).then(
      () => void statusPagesView(main),
      (err: unknown) => {
        const problems = err instanceof ApiError ? err.problems : [];
        for (const name of ['slug', 'title', 'monitor_ids']) {
          const mine = problems.filter((p) => p.path.split('/')[1] === name).map((p) => p.message);
          if (name === 'slug' && err instanceof ApiError && err.code === 'SLUG_TAKEN') mine.push(err.message);
          form.querySelector(`#e-${name}`)!.textContent = mine.join('; ');
        }
        show(errors, failure(err));
      },
    );
  });
  const remove = (p: StatusPage): void => {
    if (!confirm(`Delete the status page /status/${p.slug}?`)) return;
    call('DELETE', `/api/status-pages/${p.slug}`).then(
      () => void statusPagesView(main),
      (err: unknown) => show(errors, failure(err)),
    );
  };
  show(
    main,
    h('h1', {}, 'Status pages'),
    pages.length === 0
      ? h('p', { class: 'empty' }, 'No status pages yet.')
      : h(
          'ul',
          { class: 'pages' },
          pages.map((p) =>
            h(
              'li',
              { 'data-slug': p.slug },
              h('a', { href: `#/status-pages/${p.slug}` }, p.title),
              ' (',
              h('a', { href: `/status/${p.slug}` }, `/status/${p.slug}`),
              ') · ',
              p.monitor_ids.map((id) => names.get(id) ?? id).join(', '),
              ' · updated ',
              time(p.updated_at),
              ' ',
              guard(
                'monitors:write',
                h('button', { type: 'button', class: 'danger', onclick: () => remove(p) }, `Delete ${p.slug}`),
              ),
            ),
          ),
        ),
    h('h2', {}, 'New status page'),
    roleNote('monitors:write'),
    monitors.length === 0 ? h('p', {}, 'Create a monitor first.') : form,
  );
}
