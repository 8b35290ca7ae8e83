import type { ChannelObject, EscalationPolicy } from '@telemetry/contract';
import { ALERTING_LIMITS } from '@telemetry/contract/channel-catalog';
import { ApiError, call, get } from './api.js';
import { h, loadView, show } from './dom.js';
import {
  fieldBlock,
  fieldId,
  placeProblems,
  problemSummary,
  readField,
  removeObject,
  type FieldSpec,
} from './form-kit.js';
import { guard, roleNote } from './guard.js';

/**
 * Escalation policies: the list, and a form (new, or the one in the address) of a name and
 * ordered steps, each "notify these channels; if nobody acknowledges within N seconds, go on".
 */

interface Step {
  channels: string[];
  escalate_after_seconds?: number;
}

const NAME: FieldSpec = { pointer: '/name', label: 'Name', kind: 'text', required: true, maxLength: 100 };

function stepsInWords(p: EscalationPolicy, names: Map<string, string>): string {
  return p.steps
    .map(
      (s, i) =>
        `${i + 1}. ${s.channels.map((c) => names.get(c) ?? c).join(', ')}` +
        (i < p.steps.length - 1 && s.escalate_after_seconds ? ` (then after ${s.escalate_after_seconds} s)` : ''),
    )
    .join(' → ');
}

/** `#/escalation-policies` (`id` undefined: a new one) or `#/escalation-policies/{id}` (edit it). */
export async function escalationPolicies(
  main: HTMLElement,
  id: string | undefined,
  navigate: (hash: string) => void,
): Promise<void> {
  const loaded = await loadView(
    main,
    'Escalation policies',
    undefined,
    () => Promise.all([get<EscalationPolicy[]>('/api/escalation-policies'), get<ChannelObject[]>('/api/channels')]),
    () => void escalationPolicies(main, id, navigate),
  );
  if (!loaded) return;
  const [policies, channels] = loaded;
  const names = new Map(channels.map((c) => [c.id, c.name]));
  const editing = id ? policies.find((p) => p.id === id) : undefined;
  let steps: Step[] = editing ? structuredClone(editing.steps) : [{ channels: [] }];
  const notice = h('div', { id: 'policy-notice' });
  const stepsBox = h('div', { class: 'steps' });
  const summary = h('div', { id: 'form-error' });

  /** Reads the steps as the form shows them (before a step is added or removed). */
  const readSteps = (): Step[] =>
    steps.map((_, i) => {
      const checked = [...stepsBox.querySelectorAll<HTMLInputElement>(`input[name="/steps/${i}/channels"]:checked`)];
      const after = readField(form, afterField(i)) as number | undefined;
      return {
        channels: checked.map((c) => c.value),
        ...(after !== undefined ? { escalate_after_seconds: after } : {}),
      };
    });
  const afterField = (i: number): FieldSpec => ({
    pointer: `/steps/${i}/escalate_after_seconds`,
    label: `Step ${i + 1}: escalate after (seconds)`,
    kind: 'number',
    hint: `if nobody acknowledged by then, the next step is notified (not used on the last step); 1 to ${ALERTING_LIMITS.maxDelaySeconds}`,
  });
  const drawSteps = (): void => {
    show(
      stepsBox,
      steps.map((s, i) =>
        h(
          'fieldset',
          { class: 'step', 'aria-describedby': fieldId(`/steps/${i}/channels`, 'e') },
          h('legend', {}, `Step ${i + 1}: notify`),
          channels.map((c) =>
            h(
              'label',
              { class: 'check' },
              h('input', {
                type: 'checkbox',
                name: `/steps/${i}/channels`,
                value: c.id,
                checked: s.channels.includes(c.id),
              }),
              ' ',
              c.name,
            ),
          ),
          h('span', { id: fieldId(`/steps/${i}/channels`, 'e'), class: 'field-error' }),
          fieldBlock(afterField(i), s.escalate_after_seconds),
          steps.length > 1
            ? h(
                'button',
                {
                  type: 'button',
                  onclick: () => {
                    steps = readSteps().filter((_, j) => j !== i);
                    drawSteps();
                  },
                },
                `Remove step ${i + 1}`,
              )
            : null,
        ),
      ),
      steps.length < ALERTING_LIMITS.maxPolicySteps
        ? h(
            'button',
            {
              type: 'button',
              onclick: () => {
                steps = [...readSteps(), { channels: [] }];
                drawSteps();
                stepsBox.querySelector<HTMLInputElement>(`input[name="/steps/${steps.length - 1}/channels"]`)?.focus();
              },
            },
            'Add step',
          )
        : null,
    );
  };
  const form = h(
    'form',
    { novalidate: true, class: 'policy-form' },
    fieldBlock(NAME, editing?.name),
    stepsBox,
    summary,
    h(
      'div',
      { class: 'actions' },
      guard(
        'channels:write',
        h('button', { type: 'submit', class: 'primary', id: 'save-policy' }, editing ? 'Save policy' : 'Create policy'),
      ),
      editing ? h('a', { class: 'button', href: '#/escalation-policies' }, 'Cancel') : null,
    ),
  );
  drawSteps();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    steps = readSteps();
    const body = { name: readField(form, NAME) ?? '', steps };
    const done = editing
      ? call<EscalationPolicy>('PATCH', `/api/escalation-policies/${editing.id}`, body)
      : call<EscalationPolicy>('POST', '/api/escalation-policies', body);
    done.then(
      () => navigate('#/escalation-policies'),
      (err: unknown) => {
        const pointers = [
          '/name',
          ...steps.flatMap((_, i) => [`/steps/${i}/channels`, `/steps/${i}/escalate_after_seconds`]),
        ];
        const rest = placeProblems(form, pointers, err instanceof ApiError ? err.problems : []);
        show(summary, problemSummary(err, rest));
      },
    );
  });
  const remove = (p: EscalationPolicy): void =>
    removeObject(`escalation policy “${p.name}”`, `/api/escalation-policies/${p.id}`, notice, () =>
      navigate('#/escalation-policies'),
    );
  show(
    main,
    h('p', {}, h('a', { href: '#/channels' }, '← Alert channels')),
    h('h1', {}, 'Escalation policies'),
    h(
      'p',
      { class: 'muted' },
      'A monitor with a policy notifies its steps in order until someone acknowledges; without one, its channels are notified once.',
    ),
    notice,
    roleNote('channels:write'),
    policies.length === 0
      ? h('p', { class: 'empty' }, 'No escalation policies yet.')
      : h(
          'ul',
          { class: 'pages' },
          policies.map((p) =>
            h(
              'li',
              { 'data-policy': p.id },
              h('strong', {}, p.name),
              ': ',
              stepsInWords(p, names),
              ' ',
              guard(
                'channels:write',
                h('a', { class: 'button', href: `#/escalation-policies/${p.id}` }, `Edit ${p.name}`),
              ),
              ' ',
              guard(
                'channels:write',
                h('button', { type: 'button', class: 'danger', onclick: () => remove(p) }, `Delete ${p.name}`),
              ),
            ),
          ),
        ),
    h('h2', {}, editing ? `Edit “${editing.name}”` : 'New escalation policy'),
    channels.length === 0
      ? h('p', {}, 'Create a channel first: ', h('a', { href: '#/channels/new' }, 'New channel'))
      : form,
  );
}
