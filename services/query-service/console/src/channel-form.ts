import type { ChannelObject } from '@telemetry/contract';
import type { ChannelType } from '@telemetry/contract/channel-catalog';
import { ApiError, call, get } from './api.js';
import { CHANNEL_TYPE_LABELS, configFields, SETTING_FIELDS, TYPE_OPTIONS } from './channel-fields.js';
import { h, loading, loadView, show } from './dom.js';
import { fieldBlock, getAt, placeProblems, problemSummary, readField, setAt, type FieldSpec } from './form-kit.js';
import { guard, roleNote } from './guard.js';

/**
 * Create (`id` undefined) or edit an alert channel: its type's config fields come from the
 * type's schema (channel-fields.ts); the API's problems show next to their fields.
 */
export async function channelForm(main: HTMLElement, id: string | undefined, navigate: (hash: string) => void) {
  const title = id ? 'Edit channel' : 'New channel';
  let current: ChannelObject | undefined;
  if (id) {
    current = await loadView(
      main,
      title,
      undefined,
      () => get<ChannelObject>(`/api/channels/${id}`),
      () => void channelForm(main, id, navigate),
    );
    if (!current) return;
  } else show(main, h('h1', {}, title), loading());

  let type: ChannelType = current?.type ?? 'webhook';
  let fields: FieldSpec[] = [];
  const configBox = h('fieldset', { class: 'config' });
  const summary = h('div', { id: 'form-error' });
  // The config of the type chosen; a type chosen anew starts empty.
  const drawConfig = (): void => {
    fields = configFields(type);
    const values = current?.type === type ? current : undefined;
    show(
      configBox,
      h('legend', {}, `${CHANNEL_TYPE_LABELS[type]} settings`),
      fields.map((f) => fieldBlock(f, getAt(values, f.pointer))),
    );
  };
  const typeControl = id
    ? h('p', {}, 'Type: ', h('strong', { id: 'channel-type' }, CHANNEL_TYPE_LABELS[type]), ' (it cannot change)')
    : fieldBlock({ pointer: '/type', label: 'Type', kind: 'select', options: TYPE_OPTIONS, required: true }, type);
  const settings = SETTING_FIELDS.map((f) =>
    fieldBlock(
      f,
      current
        ? getAt(current, f.pointer)
        : f.pointer === '/send_resolved'
          ? true
          : f.pointer === '/remind_every_seconds'
            ? 0
            : undefined,
    ),
  );
  const form = h(
    'form',
    { novalidate: true, class: 'channel-form' },
    typeControl,
    settings[0],
    configBox,
    settings.slice(1),
    summary,
    h(
      'div',
      { class: 'actions' },
      guard(
        'channels:write',
        h('button', { type: 'submit', class: 'primary', id: 'save-channel' }, id ? 'Save' : 'Create channel'),
      ),
      h('a', { class: 'button', href: id ? `#/channels/${id}` : '#/channels' }, 'Cancel'),
    ),
  );
  drawConfig();
  form.querySelector('#f-type')?.addEventListener('change', (e) => {
    type = (e.target as HTMLSelectElement).value as ChannelType;
    drawConfig();
  });

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const button = form.querySelector<HTMLButtonElement>('button[type=submit]')!;
    button.disabled = true;
    show(summary, h('span', { role: 'status' }, 'Saving…'));
    const body: Record<string, unknown> = id ? { config: {} } : { type, config: {} };
    for (const f of [...SETTING_FIELDS, ...fields]) {
      const v = readField(form, f);
      if (v !== undefined) setAt(body, f.pointer, v);
    }
    // Emptied templates are cleared on edit (the default texts again).
    if (id && body.templates === undefined) body.templates = {};
    const done = id
      ? call<ChannelObject>('PATCH', `/api/channels/${id}`, body)
      : call<ChannelObject>('POST', '/api/channels', body);
    done.then(
      (r) => navigate(`#/channels/${r.data.id}`),
      (err: unknown) => {
        button.disabled = false;
        const pointers = ['/type', ...SETTING_FIELDS, ...fields].map((f) => (typeof f === 'string' ? f : f.pointer));
        const rest = placeProblems(form, pointers, err instanceof ApiError ? err.problems : []);
        show(summary, problemSummary(err, rest));
        form.querySelector<HTMLElement>('[aria-invalid]')?.focus();
      },
    );
  });
  show(
    main,
    h('p', {}, h('a', { href: id ? `#/channels/${id}` : '#/channels' }, '← Back')),
    h('h1', {}, title),
    roleNote('channels:write'),
    form,
  );
}
