import Mustache from 'mustache';
import { TEMPLATE_VARIABLES, type NotificationKind, type Problem } from '@telemetry/contract';
import type { Notification, NotifiedAlert } from './notification.js';

/**
 * Message templates (docs/alerting.md, "Templates"): Mustache, a logic-less engine
 * (`mustache`, MIT): variables, sections and inverted sections over the documented
 * variables (TEMPLATE_VARIABLES), no partials, and the view holds no functions, so no code
 * of a template's author runs. Each channel renders a title and a text from its templates
 * (or the defaults below) and builds its provider's body from them.
 */

const KNOWN = new Set<string>(TEMPLATE_VARIABLES);
/** Names usable inside `{{#alerts}}…{{/alerts}}`: each grouped item's own variables. */
const ITEM = new Set<string>(TEMPLATE_VARIABLES.filter((v) => v !== 'alerts' && v !== 'count' && v !== 'grouped'));

type Token = [string, string, number, number, Token[]?, number?];

function walk(tokens: Token[], inAlerts: boolean, out: string[]): void {
  for (const t of tokens) {
    const [kind, name] = t;
    if (kind === 'text') continue;
    if (kind === '>') {
      out.push(`partials are not allowed ({{> ${name}}})`);
      continue;
    }
    if (kind === '=') continue;
    if (kind === '&' || kind === '{') {
      // Unescaped output would let a monitor name break a webhook's JSON or an email's HTML.
      out.push(`unescaped output is not allowed ({{{${name}}}} or {{& ${name}}}): use {{${name}}}`);
      continue;
    }
    const allowed = inAlerts ? ITEM.has(name) || name === '.' || KNOWN.has(name) : KNOWN.has(name);
    if (!allowed) out.push(`unknown variable {{${name}}}`);
    if ((kind === '#' || kind === '^') && t[4]) walk(t[4], inAlerts || name === 'alerts', out);
  }
}

/** What is wrong with a template (empty: nothing), each at `path`: syntax errors and unknown variables. */
export function templateProblems(template: string, path: string): Problem[] {
  let tokens: Token[];
  try {
    tokens = Mustache.parse(template) as unknown as Token[];
  } catch (err) {
    return [{ path, message: `does not parse: ${(err as Error).message.split('\n')[0]}` }];
  }
  const out: string[] = [];
  walk(tokens, false, out);
  return [...new Set(out)].map((message) => ({ path, message }));
}

/** A channel's own templates; absent ones take the defaults. */
export interface Templates {
  title?: string;
  text?: string;
}

/** Each kind's word in a title (`{{title}}`), used by channels for their structured parts too. */
export const KIND_TITLES: Record<NotificationKind, string> = {
  down: 'DOWN',
  up: 'UP',
  reminder: 'STILL DOWN',
  escalation: 'DOWN (escalated)',
  acknowledged: 'ACKNOWLEDGED',
  test: 'TEST',
};

/** The default templates: the same for every channel, so every channel says the same. */
export const DEFAULT_TEMPLATES: Required<Templates> = {
  title: '{{#grouped}}{{count}} monitors changed state{{/grouped}}{{^grouped}}{{title}}: {{monitor.name}}{{/grouped}}',
  text: [
    '{{#grouped}}{{#alerts}}{{title}}: {{monitor.name}} ({{monitor.url}}): {{incident.cause}}\n',
    '{{/alerts}}{{/grouped}}{{^grouped}}{{monitor.name}} ({{monitor.url}}) ',
    '{{#kind_is.down}}is down: {{incident.cause}}, since {{incident.started_at}}.{{/kind_is.down}}',
    '{{#kind_is.reminder}}is still down after {{incident.duration}}: {{incident.cause}} (reminder {{reminder}}).{{/kind_is.reminder}}',
    '{{#kind_is.escalation}}is down: {{incident.cause}}, since {{incident.started_at}}; nobody acknowledged, so step {{step}} is notified.{{/kind_is.escalation}}',
    '{{#kind_is.up}}is up again after {{incident.duration}}.{{/kind_is.up}}',
    '{{#kind_is.acknowledged}}is down: {{incident.cause}}; {{incident.acknowledged_by}} acknowledged the incident.{{/kind_is.acknowledged}}',
    '{{#kind_is.test}}– this is a test notification; nothing is down.{{/kind_is.test}}',
    '{{#ack_link}}\nAcknowledge: {{ack_link}}{{/ack_link}}\nMonitor: {{monitor.link}}{{/grouped}}',
  ].join(''),
};

/** A duration in words: 2h 5m, 3m 10s, 45s. */
export function durationText(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s % 60}s`;
  return `${s}s`;
}

/** A check's failure in words: `HTTP 500`, `timeout`, `certificate expiring`, `heartbeat missed`. */
export function causeText(a: NotifiedAlert['alert']): string {
  const { error, status_code: code } = a.check;
  if (error === 'heartbeat_missing') return 'heartbeat missed';
  if (error === 'certificate_expiring') return 'certificate expiring';
  if (error === 'unexpected_status') return `HTTP ${code}`;
  if (error) return error.replace(/_/g, ' ');
  return code > 0 ? `HTTP ${code}` : 'no answer';
}

/** The variables of one item, as a template sees them (docs/alerting.md). */
function itemView(item: NotifiedAlert, recipient: string, now: number): Record<string, unknown> {
  const a = item.alert;
  // The down alert that opened the incident: this one, or (for an up) the one it closes.
  const down = a.type === 'monitor.down' ? a : item.opening;
  const started = Date.parse(down?.created_at ?? a.created_at);
  // An up's duration is the incident's (down to up); anything else's runs until now.
  const until = a.type === 'monitor.up' ? Date.parse(a.created_at) : now;
  return {
    kind: item.kind,
    kind_is: { [item.kind]: true },
    title: KIND_TITLES[item.kind],
    monitor: { id: a.monitor_id, name: a.monitor.name, url: a.monitor.url, link: item.monitorLink },
    incident: {
      id: a.incident_id,
      started_at: down?.created_at ?? '',
      resolved_at: a.type === 'monitor.up' ? a.created_at : '',
      duration: durationText((until - started) / 1000),
      cause: causeText(down ?? a),
      acknowledged_by: item.acknowledged_by ?? '',
    },
    check: {
      status_code: a.check.status_code,
      error: a.check.error ?? '',
      response_time: a.check.response_time,
      created_at: a.check.created_at,
    },
    ack_link: item.ackLink ? item.ackLink(recipient) : '',
    step: item.step ?? '',
    reminder: item.reminder ?? '',
  };
}

/** Every variable of a notification, for `recipient` (whose acknowledge links name them). */
export function messageView(n: Notification, recipient: string, now: number): Record<string, unknown> {
  const items = n.items.map((i) => itemView(i, recipient, now));
  return { ...items[0], grouped: n.items.length > 1, count: n.items.length, alerts: items };
}

/** How a rendered value is escaped: none (plain text), HTML, or inside a JSON string. */
export type Escape = 'text' | 'html' | 'json';
/** `s` safe inside HTML text and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

// NOTE: mustache hands a custom escape the value as it is in the view: numbers
// (check.status_code, count, step) arrive as numbers, so each escape takes a string of it.
const ESCAPES: Record<Escape, (v: unknown) => string> = {
  text: (v) => String(v),
  html: (v) => escapeHtml(String(v)),
  json: (v) => JSON.stringify(String(v)).slice(1, -1),
};

/** Renders one template over `view` (a template validated on save; a bad one here renders as its source). */
export function renderTemplate(template: string, view: Record<string, unknown>, escape: Escape = 'text'): string {
  try {
    return Mustache.render(template, view, {}, { escape: ESCAPES[escape] });
  } catch {
    return template;
  }
}

/** The title and text of `n` for `recipient`, from `templates` or the defaults. */
export function renderMessage(
  n: Notification,
  templates: Templates,
  recipient: string,
  now: number,
  escape: Escape = 'text',
): { title: string; text: string } {
  const view = messageView(n, recipient, now);
  return {
    title: renderTemplate(templates.title ?? DEFAULT_TEMPLATES.title, view, escape).trim(),
    text: renderTemplate(templates.text ?? DEFAULT_TEMPLATES.text, view, escape).trim(),
  };
}
