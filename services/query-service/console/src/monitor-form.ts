import type { Monitor } from '@telemetry/contract';
import { ApiError, call, get, type Problem } from './api.js';
import { failure, h, loading, show } from './dom.js';

interface Field {
  name: string;
  label: string;
  hint?: string;
  kind: 'text' | 'url' | 'number' | 'select' | 'checkbox' | 'lines' | 'pairs';
  options?: string[];
  required?: boolean;
}

const FIELDS: Field[] = [
  { name: 'name', label: 'Name', kind: 'text', required: true },
  { name: 'type', label: 'Type', kind: 'select', options: ['http', 'tcp', 'tls', 'dns', 'heartbeat'] },
  {
    name: 'url',
    label: 'URL',
    kind: 'url',
    hint: 'http(s)://… for http, tcp://host:port for tcp, tls://host[:port] for tls, dns://name for dns; none for heartbeat. Stored query values show as ****; another host drops the stored headers and credentials',
  },
  {
    name: 'method',
    label: 'Method',
    kind: 'select',
    options: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
  },
  { name: 'interval_seconds', label: 'Interval (seconds)', kind: 'number' },
  { name: 'timeout_ms', label: 'Timeout (ms)', kind: 'number' },
  {
    name: 'expected_status_codes',
    label: 'Expected status codes',
    kind: 'lines',
    hint: 'comma-separated: 200, 2xx, 301',
  },
  { name: 'keyword', label: 'Keyword the body must contain', kind: 'text' },
  { name: 'degraded_threshold_ms', label: 'Degraded above (ms)', kind: 'number' },
  { name: 'failure_threshold', label: 'Failing checks before down', kind: 'number' },
  {
    name: 'confirm_delay_ms',
    label: 'Confirm a failure after (ms)',
    kind: 'number',
    hint: 'a failing check is tried again after this long, and counts only if it fails again; 0: no retry',
  },
  { name: 'recovery_threshold', label: 'Passing checks before up', kind: 'number' },
  { name: 'follow_redirects', label: 'Follow redirects', kind: 'checkbox' },
  {
    name: 'headers',
    label: 'Request headers',
    kind: 'pairs',
    hint: 'one per line, Name: value; stored values show as ****',
  },
  {
    name: 'webhooks',
    label: 'Webhook URLs',
    kind: 'lines',
    hint: 'comma-separated; stored URLs show as scheme and host only, and kept as shown',
  },
  { name: 'tcp_send', label: 'TCP: send once connected', kind: 'text', hint: 'tcp monitors only' },
  { name: 'tcp_expect', label: 'TCP: the reply must contain', kind: 'text', hint: 'tcp monitors only' },
  {
    name: 'tls_min_days',
    label: 'TLS: days the certificate must still be valid',
    kind: 'number',
    hint: 'tls monitors only; 14 when empty',
  },
  {
    name: 'dns_record_type',
    label: 'DNS: record type',
    kind: 'select',
    options: ['', 'A', 'AAAA', 'CNAME', 'MX', 'NS', 'TXT'],
    hint: 'dns monitors only; A when empty',
  },
  {
    name: 'dns_expected',
    label: 'DNS: values the answer must hold',
    kind: 'lines',
    hint: 'dns monitors only; comma-separated; empty: any answer',
  },
  {
    name: 'dns_resolver',
    label: 'DNS: resolver',
    kind: 'text',
    hint: 'dns monitors only; an IP[:port]; empty: the runner’s',
  },
  {
    name: 'heartbeat_grace_seconds',
    label: 'Heartbeat: grace for a late call (seconds)',
    kind: 'number',
    hint: 'heartbeat monitors only: the job calls at least every interval; 60 when empty',
  },
  {
    name: 'locations',
    label: 'Locations',
    kind: 'lines',
    hint: 'comma-separated runner locations (RUNNER_LOCATION); default when empty',
  },
  {
    name: 'quorum',
    label: 'Failing locations that open an incident',
    kind: 'number',
    hint: 'a majority of the locations when empty',
  },
  { name: 'paused', label: 'Paused', kind: 'checkbox' },
];

function control(f: Field, value: unknown): HTMLElement {
  const common = { id: `f-${f.name}`, name: f.name, 'aria-describedby': `e-${f.name}${f.hint ? ` h-${f.name}` : ''}` };
  switch (f.kind) {
    case 'select':
      return h(
        'select',
        common,
        (f.options ?? []).map((o) => h('option', { value: o, selected: o === (value ?? f.options?.[0]) }, o)),
      );
    case 'checkbox':
      return h('input', { ...common, type: 'checkbox', checked: value === true });
    case 'pairs':
      return h(
        'textarea',
        { ...common, rows: 3 },
        Object.entries((value as Record<string, string> | undefined) ?? {})
          .map(([k, v]) => `${k}: ${v}`)
          .join('\n'),
      );
    case 'lines':
      return h('input', { ...common, type: 'text', value: ((value as unknown[] | undefined) ?? []).join(', ') });
    case 'number':
      return h('input', {
        ...common,
        type: 'number',
        inputmode: 'numeric',
        value: typeof value === 'string' || typeof value === 'number' ? String(value) : '',
      });
    default:
      return h('input', {
        ...common,
        type: f.kind === 'url' ? 'url' : 'text',
        required: f.required ?? false,
        value: typeof value === 'string' || typeof value === 'number' ? String(value) : '',
      });
  }
}

/** What the form says, as the API's JSON: empty optional fields are left out (create) or cleared (edit). */
function read(form: HTMLFormElement, editing: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of FIELDS) {
    const el = form.elements.namedItem(f.name) as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
    const raw = el instanceof HTMLInputElement && el.type === 'checkbox' ? el.checked : el.value.trim();
    if (f.kind === 'checkbox') out[f.name] = raw;
    else if (raw === '') {
      if (
        editing &&
        [
          'keyword',
          'degraded_threshold_ms',
          'tcp_send',
          'tcp_expect',
          'tls_min_days',
          'dns_record_type',
          'dns_resolver',
          'heartbeat_grace_seconds',
          'quorum',
        ].includes(f.name)
      )
        out[f.name] = null;
      else if (editing && ['headers', 'webhooks', 'dns_expected'].includes(f.name))
        out[f.name] = f.name === 'headers' ? {} : [];
    } else if (f.kind === 'number') out[f.name] = Number(raw);
    else if (f.kind === 'lines') {
      out[f.name] = String(raw)
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')
        .map((s) => (f.name === 'expected_status_codes' && /^\d+$/.test(s) ? Number(s) : s));
    } else if (f.kind === 'pairs') {
      out[f.name] = Object.fromEntries(
        String(raw)
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => {
            const i = l.indexOf(':');
            return i < 0 ? [l.trim(), ''] : [l.slice(0, i).trim(), l.slice(i + 1).trim()];
          }),
      );
    } else out[f.name] = raw;
  }
  return out;
}

/** Puts the API's problems next to their fields (a JSON pointer's first part names the field). */
function showProblems(form: HTMLFormElement, problems: Problem[]): void {
  for (const f of FIELDS) {
    const slot = form.querySelector(`#e-${f.name}`)!;
    const mine = problems.filter((p) => p.path.split('/')[1] === f.name);
    slot.textContent = mine.map((p) => `${p.path.split('/').slice(2).join('/') || ''} ${p.message}`.trim()).join('; ');
    form.querySelector(`#f-${f.name}`)!.toggleAttribute('aria-invalid', mine.length > 0);
  }
}

/** Create (`id` undefined) or edit a monitor; `notice` shows above the buttons (after a save). */
export async function monitorForm(
  main: HTMLElement,
  id: string | undefined,
  navigate: (hash: string) => void,
  notice?: string,
): Promise<void> {
  const title = id ? 'Edit monitor' : 'New monitor';
  show(main, h('h1', {}, title), loading());
  let current: Monitor | undefined;
  if (id) {
    try {
      current = await get<Monitor>(`/api/monitors/${id}`);
    } catch (err) {
      show(
        main,
        h('h1', {}, title),
        failure(err, () => void monitorForm(main, id, navigate)),
      );
      return;
    }
  }
  const summary = h('div', { id: 'form-error', role: 'alert' }, notice ? h('p', {}, notice) : null);
  const form = h(
    'form',
    { novalidate: true, class: 'monitor-form' },
    FIELDS.map((f) =>
      h(
        'div',
        { class: `field ${f.kind}` },
        h('label', { for: `f-${f.name}` }, f.label, f.required ? ' (required)' : ''),
        control(
          f,
          current
            ? (current as unknown as Record<string, unknown>)[f.name]
            : f.name === 'follow_redirects'
              ? true
              : undefined,
        ),
        f.hint ? h('small', { id: `h-${f.name}`, class: 'muted' }, f.hint) : null,
        h('span', { id: `e-${f.name}`, class: 'field-error' }),
      ),
    ),
    summary,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, id ? 'Save' : 'Create monitor'),
      h('a', { class: 'button', href: id ? `#/monitors/${id}` : '#/' }, 'Cancel'),
    ),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const button = form.querySelector<HTMLButtonElement>('button[type=submit]')!;
    button.disabled = true;
    show(summary, h('span', { role: 'status' }, 'Saving…'));
    const body = read(form, id !== undefined);
    const done = id
      ? call<Monitor>('PATCH', `/api/monitors/${id}`, body)
      : call<Monitor>('POST', '/api/monitors', body);
    done.then(
      (r) => {
        const dropped = r.data.dropped_secrets ?? [];
        if (dropped.length === 0) {
          navigate(`#/monitors/${r.data.id}`);
          return;
        }
        // The URL moved to another origin: say what stayed behind, on the form as stored now.
        void monitorForm(
          main,
          r.data.id,
          navigate,
          `Saved. The URL moved to another host, so these stored secrets were dropped: ${dropped.join(', ')}. Enter them again to send them there.`,
        );
      },
      (err: unknown) => {
        button.disabled = false;
        const problems = err instanceof ApiError ? err.problems : [];
        // TARGET_NOT_ALLOWED names its field in details.problems too.
        showProblems(form, problems);
        show(summary, failure(err));
        const first = form.querySelector<HTMLElement>('[aria-invalid]');
        first?.focus();
      },
    );
  });
  show(main, h('p', {}, h('a', { href: id ? `#/monitors/${id}` : '#/' }, '← Back')), h('h1', {}, title), form);
}
