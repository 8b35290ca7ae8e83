import {
  monitorTypeModule,
  stepUrlOrigin,
  stepUrlTargetOrigin,
  type MonitorPatch,
  type MonitorSettings,
} from '@telemetry/contract';

/**
 * A monitor's secrets and what is shown of them (docs/api.md, "Secrets"). Stored: the
 * real URL, header values, webhook URLs (sealed, see MonitorStore). Shown (API answers,
 * the registry's `spec`, alert messages, webhook bodies, delivery records and logs):
 * header values and the values of `variables` as MASK; the monitor URL without userinfo and with every query value
 * MASK; a webhook URL as its scheme and host only. A PATCH that sends a shown form back
 * keeps the stored value (unmaskPatch).
 */

/**
 * What an answer shows instead of a header value or a query value of a monitor's URL:
 * ASCII, so it is a valid header value and URL part.
 */
export const MASK = '****';

/** One `name=value` (or bare `value`) item of a query string, as written. */
interface QueryItem {
  /** The name; undefined for an item without `=`, which is all value. */
  name: string | undefined;
  value: string;
}

function queryItems(search: string): QueryItem[] {
  if (search.length <= 1) return [];
  return search
    .slice(1)
    .split('&')
    .map((p) => {
      const i = p.indexOf('=');
      return i < 0 ? { name: undefined, value: p } : { name: p.slice(0, i), value: p.slice(i + 1) };
    });
}

function queryText(items: readonly QueryItem[]): string {
  if (items.length === 0) return '';
  return `?${items.map((q) => (q.name === undefined ? q.value : `${q.name}=${q.value}`)).join('&')}`;
}

/** Every non-empty query value as MASK (a bare item is all value). */
function maskedItems(items: readonly QueryItem[]): QueryItem[] {
  return items.map((q) => (q.value === '' ? q : { ...q, value: MASK }));
}

function parsed(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/**
 * A monitor's URL as shown: without userinfo, every query value MASK
 * (`https://u:p@api.example.com/health?token=abc&v=` shows as
 * `https://api.example.com/health?token=****&v=`). A URL with neither shows as sent.
 */
export function maskUrl(url: string): string {
  const u = parsed(url);
  // A stored URL the parser refuses: shown without what may be userinfo or a query.
  if (!u) return url.replace(/\/\/[^/?#]*@/, '//').replace(/[?#].*$/, '');
  const items = queryItems(u.search);
  if (u.username === '' && u.password === '' && items.every((q) => q.value === '')) return url;
  return `${u.protocol}//${u.host}${u.pathname}${queryText(maskedItems(items))}${u.hash}`;
}

/**
 * A webhook URL as shown: its scheme and host only (`https://hooks.slack.com`), since
 * Slack, Discord and Telegram put the secret in the path.
 */
export function maskWebhookUrl(url: string): string {
  const u = parsed(url);
  return u ? `${u.protocol}//${u.host}` : '(invalid url)';
}

/** Webhook URLs as shown: each scheme and host once (two hooks on one host show as one entry). */
export function maskWebhooks(urls: readonly string[]): string[] {
  return [...new Set(urls.map(maskWebhookUrl))];
}

export function maskHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((k) => [k, MASK]));
}

/** An api_flow or browser monitor's variables as shown: every value MASK (docs/api-flows.md, "Variables"). */
export function maskVariables(variables: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(variables).map((k) => [k, MASK]));
}

/** Scheme, host and port (default ports omitted): whom a URL's credentials are for. */
export function originOf(url: string): string {
  const u = parsed(url);
  return u ? `${u.protocol}//${u.host}` : url;
}

/**
 * The stored secrets a PATCH has to do with: the monitor's URL, headers, webhooks and
 * variables, and the steps whose URLs say where the variables go.
 */
type Secrets = Pick<MonitorSettings, 'url' | 'headers' | 'webhooks' | 'variables'> &
  Partial<Pick<MonitorSettings, 'type' | 'api_steps' | 'browser_steps'>>;

/** A PATCH with the stored secrets put back for what it sent masked, and the secrets it dropped. */
export interface UnmaskedPatch {
  patch: MonitorPatch;
  /**
   * Stored secrets the change leaves out because the URL moved to another origin
   * (docs/monitors.md, "Secrets and a changed URL"): `url.userinfo`,
   * `url.query.<name>` (`url.query` for an item without a name), `headers.<Name>`,
   * `variables.<name>`.
   */
  dropped: string[];
}

/**
 * A PATCH that sends back what an answer showed keeps the stored secret: the shown URL
 * keeps the stored URL, a header value MASK its stored value, a webhook shown as scheme
 * and host the stored webhooks it stands for. When the URL moves to another origin, the
 * stored header values and URL credentials do not follow it unless the PATCH sends them
 * again: they are dropped, and named in `dropped`. Within one origin a new URL without
 * userinfo keeps the stored userinfo (`https://@host/...` removes it), and a query value
 * MASK the stored value of that name.
 */
export function unmaskPatch(current: Secrets, patch: MonitorPatch): UnmaskedPatch {
  const out: MonitorPatch = { ...patch };
  const dropped: string[] = [];
  const serverSet = serverSetsUrl(current, patch);
  // The URL the monitor moves to ('' when the server sets it): a shown URL stands for the stored one.
  const nextUrl =
    patch.url !== undefined
      ? patch.url === maskUrl(current.url)
        ? current.url
        : patch.url
      : serverSet
        ? ''
        : current.url;
  const moves = originMoves(current, {
    url: nextUrl,
    api_steps: patch.api_steps ?? current.api_steps,
    browser_steps: patch.browser_steps ?? current.browser_steps,
  });
  const moved = moves.url;
  // Made a type whose URL the server sets (heartbeat): the URL leaves its origin too.
  if (patch.url === undefined && serverSet) {
    dropped.push(...urlSecrets(current.url));
  } else if (patch.url !== undefined && patch.url !== current.url) {
    if (patch.url === maskUrl(current.url)) out.url = current.url;
    else out.url = carryUrlSecrets(current.url, patch.url, moved, dropped);
  }
  const stored = new Map(Object.entries(current.headers).map(([k, v]) => [k.toLowerCase(), v]));
  if (patch.headers !== undefined) {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(patch.headers)) {
      const kept = v === MASK ? stored.get(k.toLowerCase()) : undefined;
      if (kept === undefined) headers[k] = v;
      else if (moved) dropped.push(`headers.${k}`);
      else headers[k] = kept;
    }
    out.headers = headers;
  } else if (moved && stored.size > 0) {
    for (const k of Object.keys(current.headers)) dropped.push(`headers.${k}`);
    out.headers = {};
  }
  if (patch.webhooks !== undefined) out.webhooks = unmaskWebhooks(current.webhooks, patch.webhooks);
  const variables = unmaskVariables(current, patch, moves.variables, dropped);
  if (variables !== undefined) out.variables = variables;
  return { patch: out, dropped };
}

/** Where a monitor connects, as far as its secrets go (originMoves). */
export type MonitorOrigins = Pick<MonitorSettings, 'url'> &
  Partial<Pick<MonitorSettings, 'api_steps' | 'browser_steps'>>;

/**
 * Whether a monitor's secrets would leave the origins they were stored for, were it to
 * connect as `next` (its URL `''` when the server sets it): `url`, its URL's origin moved
 * (its URL credentials and header values go to that origin); `variables`, its flow reaches
 * an origin it did not (its variables go where its steps go). A PATCH (unmaskPatch) and a
 * configuration document's SecretPins (the monitors kind) keep a stored secret only where
 * its origin stays: one rule for both.
 */
export function originMoves(current: MonitorOrigins, next: MonitorOrigins): { url: boolean; variables: boolean } {
  const before = flowOrigins(current);
  return {
    url: originOf(next.url) !== originOf(current.url),
    variables: [...flowOrigins(next)].some((o) => !before.has(o)),
  };
}

/**
 * The variables after a PATCH: a value MASK is the stored value of that name. The stored
 * values go only where they went before: when the change sends the flow to an origin it
 * did not reach (its URL's, or an absolute step URL's), the stored values do not follow
 * unless the PATCH sends them again: they are dropped and named (`variables.<name>`).
 * Undefined: the PATCH leaves them as stored.
 */
function unmaskVariables(
  current: Secrets,
  patch: MonitorPatch,
  moved: boolean,
  dropped: string[],
): Record<string, string> | undefined {
  const stored = new Map(Object.entries(current.variables));
  if (patch.variables === undefined) {
    if (!moved || stored.size === 0) return undefined;
    for (const k of stored.keys()) dropped.push(`variables.${k}`);
    return {};
  }
  // NOTE: entries, not assignment: `__proto__` is a valid variable name.
  const entries: [string, string][] = [];
  for (const [k, v] of Object.entries(patch.variables)) {
    const kept = v === MASK ? stored.get(k) : undefined;
    if (kept === undefined) entries.push([k, v]);
    else if (moved) dropped.push(`variables.${k}`);
    else entries.push([k, kept]);
  }
  return Object.fromEntries(entries);
}

/** Where a monitor's variables are sent: its URL's origin and those of its steps' absolute URLs. */
function flowOrigins(s: MonitorOrigins): Set<string> {
  const steps = [
    ...(s.api_steps ?? []).map((step) => step.url),
    ...(s.browser_steps ?? []).flatMap((step) => (step.action === 'goto' && step.url ? [step.url] : [])),
  ];
  const origins = new Set<string>();
  const own = stepUrlOrigin(s.url);
  if (own !== '') origins.add(originOf(own));
  // Each step where it resolves against the URL, as the runner sends it (`/\evil.example/` too).
  const base = parsed(s.url) ? s.url : 'http://base.invalid/';
  for (const u of steps) {
    const o = stepUrlTargetOrigin(base, u);
    if (o !== '') origins.add(o);
    else if (stepUrlOrigin(u) !== '') origins.add(originOf(stepUrlOrigin(u)));
  }
  return origins;
}

/** Does the PATCH make the monitor a type whose URL the server sets (heartbeat://<id>)? */
function serverSetsUrl(current: Secrets, patch: MonitorPatch): boolean {
  return (
    patch.type !== undefined && patch.type !== current.type && monitorTypeModule(patch.type).serverScheme !== undefined
  );
}

/** The secrets a URL holds, as `dropped` names them: its userinfo and its query values. */
function urlSecrets(raw: string): string[] {
  const url = parsed(raw);
  if (!url) return [];
  const out = url.username !== '' || url.password !== '' ? ['url.userinfo'] : [];
  for (const q of queryItems(url.search)) {
    if (q.value !== '') out.push(q.name === undefined ? 'url.query' : `url.query.${q.name}`);
  }
  return out;
}

/** Each webhook sent as a stored one's scheme and host stands for every stored webhook shown so. */
function unmaskWebhooks(stored: readonly string[], sent: readonly string[]): string[] {
  const out: string[] = [];
  for (const w of sent) {
    const same = stored.filter((s) => maskWebhookUrl(s) === w);
    out.push(...(same.length > 0 ? same : [w]));
  }
  return [...new Set(out)];
}

/**
 * The URL a PATCH moves to, with the stored URL's credentials carried over within its
 * origin, or named in `dropped` when it moves to another one.
 */
function carryUrlSecrets(storedUrl: string, nextUrl: string, moved: boolean, dropped: string[]): string {
  const from = parsed(storedUrl);
  const to = parsed(nextUrl);
  if (!from || !to) return nextUrl; // the schema reports a URL that does not parse
  const hadUserinfo = from.username !== '' || from.password !== '';
  let changed = false;
  // `user:****@` is how answers showed a URL password before userinfo was left out: the stored one.
  if (to.password === MASK) {
    to.username = '';
    to.password = '';
    changed = true;
  }
  const sendsUserinfo =
    to.username !== '' || to.password !== '' || (!changed && /^[a-z][a-z0-9+.-]*:\/\/@/i.test(nextUrl));
  const storedItems = queryItems(from.search);
  const used = new Set<QueryItem>();
  const items: QueryItem[] = [];
  for (const q of queryItems(to.search)) {
    const match = q.value === MASK ? storedItems.find((s) => s.name === q.name && !used.has(s)) : undefined;
    if (!match || match.value === '') items.push(q);
    else {
      used.add(match);
      changed = true;
      if (moved) dropped.push(match.name === undefined ? 'url.query' : `url.query.${match.name}`);
      else items.push(match);
    }
  }
  if (hadUserinfo && !sendsUserinfo) {
    if (moved) dropped.push('url.userinfo');
    else {
      to.username = from.username;
      to.password = from.password;
      changed = true;
    }
  }
  if (!changed) return nextUrl;
  to.search = queryText(items);
  return to.href;
}
