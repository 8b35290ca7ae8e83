import {
  browserStepLabel,
  MONITOR_LIMITS,
  resolveBrowserUrl,
  substitute,
  type BrowserStep,
  type CheckError,
  type CheckTimings,
  type MonitorSettings,
} from '@telemetry/contract';
import { httpCall, HttpCallError } from '@telemetry/platform';
import { maskUrl } from '@telemetry/store';
import type { IncomingHttpHeaders } from 'node:http';
import type { BrowserContext, Page, Route } from 'playwright-core';
import { BrowserBusyError, BrowserDeadlineError, type BrowserPool } from '../browser-pool.js';
import { statusExpected } from './http.js';
import { redact } from './redact.js';
import type { Probe, ProbeContext } from './types.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

/** A step without its own timeout_ms gets this (never past the monitor's timeout_ms overall). */
export const DEFAULT_STEP_TIMEOUT_MS = 5000;
/** Bytes of one response the runner hands to the page at most (a script, an image; the rest is cut). */
export const BROWSER_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
/** Bytes of responses one check fetches in all at most: a request past them is aborted (and the check fails). */
export const BROWSER_MAX_CHECK_BYTES = 32 * 1024 * 1024;
/**
 * Requests of one check the runner fetches at once at most (the others wait their turn):
 * with BROWSER_MAX_RESPONSE_BYTES, what one check holds in the runner at a time.
 */
export const BROWSER_MAX_CONCURRENT_FETCHES = 6;
/**
 * Past the check's timeout_ms, what the pool grants before it closes the context under a
 * check that is still running (a page that stopped answering): the check itself ends at
 * timeout_ms, this only bounds a hang.
 */
export const BROWSER_HARD_DEADLINE_GRACE_MS = 1000;
/** The failure screenshot takes this at most (and never more than what is left of timeout_ms). */
const SCREENSHOT_TIMEOUT_MS = 3000;

/** A browser check's result: the failure's screenshot travels beside it, to its own topic (check.ts). */
export interface BrowserProbeResult extends ProbeResult {
  png?: Buffer;
}

/** A step whose assertion did not hold (assertion_failed; any other failure is step_failed). */
class AssertionFailure extends Error {}

/** Playwright's abort reasons for what the egress-bound fetch ran into. */
const ABORT_REASON: Partial<Record<CheckError, string>> = {
  target_not_allowed: 'blockedbyclient',
  timeout: 'timedout',
  dns: 'namenotresolved',
  connection_refused: 'connectionrefused',
  connection_reset: 'connectionreset',
  tls: 'failed',
};

/** Response headers the runner sets itself when it hands a body to the page. */
const HOP_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

/**
 * Kept in each document of the page (context.addInitScript): LCP, CLS and the longest
 * interaction (INP's measure on a page with few interactions) from the browser's own
 * PerformanceObservers. Chosen over the web-vitals library: the same three observers
 * without a bundle to inject, and no wait for the page to be hidden before LCP and CLS
 * are reported (a check reads them when it wants).
 */
const VITALS_SCRIPT = `(() => {
  if (window !== window.top) return;
  const v = { lcp: 0, cls: 0, inp: 0, doc: Math.random() };
  Object.defineProperty(window, '__telemetryVitals', { value: v });
  const watch = (type, f, extra) => {
    try { new PerformanceObserver((l) => l.getEntries().forEach(f)).observe({ type, buffered: true, ...extra }); } catch {}
  };
  watch('largest-contentful-paint', (e) => { v.lcp = e.renderTime || e.startTime; });
  watch('layout-shift', (e) => { if (!e.hadRecentInput) v.cls += e.value; });
  watch('event', (e) => { if (e.interactionId) v.inp = Math.max(v.inp, e.duration); }, { durationThreshold: 16 });
})();`;

interface Vitals {
  lcp: number;
  cls: number;
  inp: number;
  doc: number;
}

const round = (n: number): number => Math.round(Math.max(0, n) * 100) / 100;

/** An absolute URL in any scheme (`https://u:p@host/path?q=v`), up to the next space or quote. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;

/** An absolute URL as a detail shows it (maskUrl: no userinfo, query values ****); a path as it is. */
export function shownUrl(url: string): string {
  return /^[a-z][a-z0-9+.-]*:/i.test(url) ? maskUrl(url) : url;
}

/**
 * The first line of an error, without Playwright's `locator.click: ` prefix and call log,
 * and without the URLs Playwright names (`net::ERR_CONNECTION_REFUSED at https://u:p@host/?token=…`):
 * a detail is read back by anyone who may read the monitor, and a URL may carry its secrets.
 */
export function reason(err: unknown): string {
  const first = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
  return (
    first
      .replace(/^[a-zA-Z]+\.[a-zA-Z]+: /, '')
      .replace(/ at [a-z][a-z0-9+.-]*:\/\/\S+/gi, '')
      .replace(URL_IN_TEXT, (u) => maskUrl(u))
      .trim() || 'failed'
  );
}

/** Headers for route.fulfill: one string each (Set-Cookie lines joined by newlines, as Playwright takes them). */
function fulfilHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_HEADERS.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(name === 'set-cookie' ? '\n' : ', ') : value;
  }
  return out;
}

/**
 * A browser monitor's check (docs/browser-checks.md): a fresh context of the runner's
 * Chromium opens the monitor's URL, then runs its steps in order. Every request of the
 * page is fetched by the runner through the egress policy (route interception); a denied
 * one is aborted and makes the check `request_blocked`. Never throws.
 */
export function browserProbeWith(pool: BrowserPool | undefined): Probe {
  return async (m, ctx) => {
    // A runner without Chromium never owns a browser monitor (service.ts); a row that
    // reaches one anyway (a probe called directly) says so.
    if (!pool) return failed('network', 0, { detail: 'this runner has no browser (RUNNER_CHROMIUM_PATH)' });
    const waited = stopwatch();
    // The check's timeout_ms runs from now: the wait for a browser is part of it.
    const deadline = Date.now() + m.timeout_ms;
    try {
      return await pool.withContext(m.timeout_ms, (context) => check(context, m, ctx, deadline), {
        deadline: deadline + BROWSER_HARD_DEADLINE_GRACE_MS,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
    } catch (err) {
      if (err instanceof BrowserDeadlineError) {
        return failed('timeout', waited(), {
          detail: `the page stopped answering: the check's timeout_ms (${m.timeout_ms} ms) ran out`,
        });
      }
      if (err instanceof BrowserBusyError) return failed('timeout', waited(), { detail: err.message });
      return failed('network', waited(), { detail: scrub(`the browser failed: ${reason(err)}`, m.variables) });
    }
  };
}

/** What `within` gives back when the time ran out first. */
const LATE = Symbol('late');

/**
 * `p`, or LATE once `ms` have passed. For what Playwright gives no timeout of its own
 * (page.evaluate, keyboard.press, setViewportSize): a page whose script never yields keeps them pending.
 */
async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  p.catch(() => undefined);
  if (ms <= 0) return LATE;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => (timer = setTimeout(() => resolve(LATE), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function check(
  context: BrowserContext,
  m: MonitorSettings,
  ctx: ProbeContext,
  deadline: number,
): Promise<BrowserProbeResult> {
  const elapsed = stopwatch();
  const remaining = (): number => Math.max(0, deadline - Date.now());
  /** A call into the page outlasted what was left: the page stopped answering. */
  let stalled = false;
  const inPage = async <T>(p: Promise<T>): Promise<T | undefined> => {
    const r = await within(p, remaining());
    if (r !== LATE) return r;
    stalled = true;
    return undefined;
  };
  const values = new Map(Object.entries(m.variables));
  const blocked: string[] = [];
  let mainFailure: CheckError | undefined;
  // The check's share of the runner's memory: BROWSER_MAX_CONCURRENT_FETCHES at once, BROWSER_MAX_CHECK_BYTES in all.
  let fetching = 0;
  const turns: (() => void)[] = [];
  let bytesLeft = BROWSER_MAX_CHECK_BYTES;
  let overBudget = 0;
  const turn = async (): Promise<void> => {
    if (fetching < BROWSER_MAX_CONCURRENT_FETCHES) {
      fetching++;
      return;
    }
    // The slot is handed over by done(): `fetching` stays counted.
    await new Promise<void>((resolve) => turns.push(resolve));
  };
  const done = (): void => {
    const next = turns.shift();
    if (next) next();
    else fetching--;
  };

  const fetchThrough = async (route: Route): Promise<void> => {
    const req = route.request();
    let url: URL;
    try {
      url = new URL(req.url());
    } catch {
      return route.abort('failed');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return route.abort('blockedbyclient');
    const headers: Record<string, string> = { ...req.headers(), 'accept-encoding': 'identity' };
    // Cookies live in the context's jar (Set-Cookie of fulfilled answers goes there); the
    // runner's fetch sends them as the browser would.
    const cookies = await context.cookies(url.href).catch(() => []);
    if (cookies.length > 0) headers.cookie = cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    await turn();
    try {
      if (bytesLeft <= 0) {
        overBudget++;
        return await route.abort('failed').catch(() => undefined);
      }
      const keep = Math.min(BROWSER_MAX_RESPONSE_BYTES, bytesLeft);
      const answer = await httpCall({
        url: url.href,
        method: req.method(),
        headers,
        // The bytes as the page sent them (postData() would decode them as UTF-8).
        body: req.postDataBuffer(),
        timeoutMs: Math.max(1, remaining()),
        // The page follows redirects itself, each hop intercepted and judged again.
        maxRedirects: 0,
        maxBodyBytes: keep,
        keepBytes: keep,
        signal: ctx.signal,
        policy: ctx.policy,
      });
      bytesLeft -= answer.body.length;
      if (answer.truncated && keep < BROWSER_MAX_RESPONSE_BYTES) {
        // Cut by the check's budget, not by the per-response limit: the page does not get half of it.
        bytesLeft = 0;
        overBudget++;
        return await route.abort('failed').catch(() => undefined);
      }
      await route.fulfill({ status: answer.statusCode, headers: fulfilHeaders(answer.headers), body: answer.body });
    } catch (err) {
      const kind: CheckError = err instanceof HttpCallError ? err.kind : 'network';
      if (kind === 'target_not_allowed' && !blocked.includes(url.origin)) blocked.push(url.origin);
      if (req.isNavigationRequest() && req.frame().parentFrame() === null) mainFailure ??= kind;
      // The page may be gone already (the check ended): nothing to abort then.
      await route.abort(ABORT_REASON[kind] ?? 'failed').catch(() => undefined);
    } finally {
      done();
    }
  };
  // Nothing the page asks for leaves but through fetchThrough; WebSockets not at all.
  await context.route('**/*', fetchThrough);
  await context.routeWebSocket(/.*/, (ws) => ws.close({ code: 1008, reason: 'no WebSocket in browser checks' }));
  await context.addInitScript(VITALS_SCRIPT);
  const page = await context.newPage();
  page.setDefaultTimeout(DEFAULT_STEP_TIMEOUT_MS);

  const timings: CheckTimings = {};
  const steps: NonNullable<CheckTimings['steps']> = [];
  let statusCode = 0;
  let failure: { error: CheckError; detail: string } | undefined;
  let firstVitals: Vitals | undefined;

  // The monitor's URL first: its answer's status is the check's.
  try {
    const response = await page.goto(m.url, { timeout: Math.max(1, remaining()), waitUntil: 'load' });
    statusCode = response?.status() ?? 0;
    if (!statusExpected(statusCode, m.expected_status_codes)) {
      failure = { error: 'unexpected_status', detail: `open ${maskUrl(m.url)}: answered HTTP ${statusCode}` };
    }
    timings.navigation = await inPage(navigationTimings(page));
    firstVitals = await inPage(readVitals(page, true));
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    failure = {
      error: timedOut ? 'timeout' : (mainFailure ?? 'network'),
      detail: `open ${maskUrl(m.url)}: ${timedOut ? `no load within timeout_ms (${m.timeout_ms} ms)` : reason(err)}`,
    };
  }

  for (const [i, step] of m.browser_steps.entries()) {
    if (failure) break;
    const label = browserStepLabel(step.url === undefined ? step : { ...step, url: shownUrl(step.url) }, i);
    const timeout = Math.min(step.timeout_ms ?? DEFAULT_STEP_TIMEOUT_MS, remaining());
    if (timeout <= 0 || stalled) {
      failure = { error: 'timeout', detail: `${label}: the check's timeout_ms (${m.timeout_ms} ms) ran out` };
      break;
    }
    const took = stopwatch();
    try {
      // Bounded here too: a key press (and Playwright's own timers) wait on a page that may never answer.
      if ((await within(runStep(page, step, timeout, m.url, values), timeout + 100)) === LATE) {
        throw new Error(`Timeout ${timeout}ms exceeded.`);
      }
      steps.push({ name: label, duration_ms: took(), ok: true });
    } catch (err) {
      steps.push({ name: label, duration_ms: took(), ok: false });
      // A step cut short by the check's own timeout_ms failed for want of time, not of its element or text.
      const cut = timeout < (step.timeout_ms ?? DEFAULT_STEP_TIMEOUT_MS) && remaining() <= 50;
      failure = cut
        ? { error: 'timeout', detail: `${label}: the check's timeout_ms (${m.timeout_ms} ms) ran out` }
        : {
            error: err instanceof AssertionFailure ? 'assertion_failed' : 'step_failed',
            detail: `${label}: ${reason(err)}`,
          };
    }
  }
  const responseTime = elapsed();
  if (steps.length > 0) timings.steps = steps;
  const lastVitals = await inPage(readVitals(page, false));
  const vitals = vitalsOf(firstVitals, lastVitals);
  if (vitals) timings.web_vitals = vitals;

  if (overBudget > 0) {
    const mib = BROWSER_MAX_CHECK_BYTES / 1024 / 1024;
    failure ??= {
      error: 'network',
      detail: `${overBudget} request(s) aborted: the page's responses passed the check's ${mib} MiB budget`,
    };
  }
  if (!failure && stalled) {
    failure = {
      error: 'timeout',
      detail: `the page stopped answering: the check's timeout_ms (${m.timeout_ms} ms) ran out`,
    };
  }
  if (blocked.length > 0) {
    const more = blocked.length > 1 ? ` (and ${blocked.length - 1} other origins)` : '';
    failure = { error: 'request_blocked', detail: `request to ${blocked[0]} blocked by the egress policy${more}` };
  }
  const extra = { status_code: statusCode, ...(Object.keys(timings).length > 0 ? { timings } : {}) };
  if (!failure) return passed(m, responseTime, extra);
  // What is left of timeout_ms, no more: a check never runs past it.
  const png = stalled ? undefined : await screenshot(page, Math.min(SCREENSHOT_TIMEOUT_MS, remaining()));
  const detail = scrub(failure.detail, m.variables).slice(0, MONITOR_LIMITS.maxCheckDetailLength);
  return { ...failed(failure.error, responseTime, { ...extra, detail }), ...(png ? { screenshot: true, png } : {}) };
}

/** Runs one step within `timeout` ms; throws what went wrong (AssertionFailure for assert_*). */
async function runStep(
  page: Page,
  step: BrowserStep,
  timeout: number,
  base: string,
  values: ReadonlyMap<string, string>,
): Promise<void> {
  // Selectors are CSS only (the module checks them so): Playwright's css engine.
  const css = (s: string) => page.locator(`css=${s}`).first();
  switch (step.action) {
    case 'goto': {
      const url = resolveBrowserUrl(base, step.url ?? '/', values);
      if (!url) throw new Error('the URL does not parse');
      const response = await page.goto(url.href, { timeout, waitUntil: 'load' });
      if (response && response.status() >= 400) throw new Error(`answered HTTP ${response.status()}`);
      return;
    }
    case 'click':
      return css(step.selector ?? '').click({ timeout });
    case 'fill':
      return css(step.selector ?? '').fill(substitute(step.value ?? '', values).text, { timeout });
    case 'press':
      if (step.selector !== undefined) return css(step.selector).press(step.value ?? '', { timeout });
      return page.keyboard.press(step.value ?? '');
    case 'wait_for': {
      const target =
        step.selector !== undefined
          ? page.locator(`css=${step.selector}`, step.text !== undefined ? { hasText: step.text } : {})
          : page.getByText(step.text ?? '');
      return target.first().waitFor({ state: 'visible', timeout });
    }
    case 'assert_text': {
      const text = step.text ?? '';
      const scope = step.selector ?? 'body';
      try {
        await page.locator(`css=${scope}`, { hasText: text }).first().waitFor({ state: 'attached', timeout });
      } catch {
        const seen = await page
          .locator(`css=${scope}`)
          .first()
          .innerText({ timeout: 500 })
          .catch(() => undefined);
        const saw =
          seen === undefined ? `no ${scope}` : `saw ${JSON.stringify(shorten(seen.replace(/\s+/g, ' '), 120))}`;
        throw new AssertionFailure(`${JSON.stringify(text)} not found within ${timeout} ms; ${saw}`);
      }
      return;
    }
    case 'assert_url': {
      const part = step.url ?? '';
      try {
        await page.waitForURL((u) => u.href.includes(part), { timeout, waitUntil: 'commit' });
      } catch {
        throw new AssertionFailure(`the URL ${maskUrl(page.url())} does not contain ${JSON.stringify(part)}`);
      }
      return;
    }
  }
}

function shorten(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

/** `text` with every variable's value (as typed, percent-encoded, JSON-escaped) shown as ****: variables are secrets. */
export function scrub(text: string, variables: Record<string, string>): string {
  return redact(text, Object.values(variables));
}

const NAVIGATION_SCRIPT = `(() => {
  const e = performance.getEntriesByType('navigation')[0];
  return e ? { ttfb: e.responseStart, dcl: e.domContentLoadedEventEnd, load: e.loadEventEnd } : null;
})()`;
const VITALS_NOW = `(() => { const v = window.__telemetryVitals; return v ? { ...v } : null; })()`;
/**
 * After two frames, and then until the first page's LCP has been reported (its observer is
 * called after the paint, sometimes frames later) or 1 s has passed.
 */
const VITALS_SETTLED = `new Promise((r) => {
  const t0 = performance.now();
  const tick = () => {
    const v = window.__telemetryVitals;
    if ((v && v.lcp > 0) || performance.now() - t0 > 1000) r(null);
    else setTimeout(tick, 20);
  };
  requestAnimationFrame(() => requestAnimationFrame(tick));
}).then(() => ${VITALS_NOW})`;

/** The first page's Navigation Timing marks, ms from the start of its navigation. */
async function navigationTimings(page: Page): Promise<CheckTimings['navigation']> {
  const n = await page
    .evaluate<{ ttfb: number; dcl: number; load: number } | null>(NAVIGATION_SCRIPT)
    .catch(() => null);
  if (!n) return undefined;
  return { ttfb_ms: round(n.ttfb), dom_content_loaded_ms: round(n.dcl), load_ms: round(n.load) };
}

/** The vitals of the page's current document (`settle`: once LCP has been painted). */
async function readVitals(page: Page, settle: boolean): Promise<Vitals | undefined> {
  const v = await page.evaluate<Vitals | null>(settle ? VITALS_SETTLED : VITALS_NOW).catch(() => null);
  return v ?? undefined;
}

/**
 * LCP and CLS of the first page (what a visitor waits for); INP where an interaction was
 * measured (the longest, in the document the check ended on: a click that navigates
 * away takes its own measure with it).
 */
function vitalsOf(first: Vitals | undefined, last: Vitals | undefined): CheckTimings['web_vitals'] {
  const sameDoc = first && last && first.doc === last.doc;
  const lcp = first?.lcp ?? 0;
  const cls = sameDoc ? last.cls : first?.cls;
  const inp = Math.max(last?.inp ?? 0, sameDoc ? 0 : (first?.inp ?? 0));
  const out: NonNullable<CheckTimings['web_vitals']> = {};
  if (lcp > 0) out.lcp_ms = round(lcp);
  if (cls !== undefined) out.cls = Math.round(cls * 10_000) / 10_000;
  if (inp > 0) out.inp_ms = round(inp);
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * A PNG of the page at most maxScreenshotBytes: the viewport, else a smaller one, else
 * none; within `ms` in all (none when the time is up).
 */
async function screenshot(page: Page, ms: number): Promise<Buffer | undefined> {
  const max = MONITOR_LIMITS.maxScreenshotBytes;
  const until = Date.now() + ms;
  const left = (): number => until - Date.now();
  const take = async (): Promise<Buffer | undefined> => {
    if (left() < 50) return undefined;
    const png = await page.screenshot({ type: 'png', timeout: left(), animations: 'disabled' });
    if (png.length <= max) return png;
    await page.setViewportSize({ width: 640, height: 360 });
    if (left() < 50) return undefined;
    const small = await page.screenshot({ type: 'png', timeout: left(), animations: 'disabled', scale: 'css' });
    return small.length <= max ? small : undefined;
  };
  const png = await within(
    take().catch(() => undefined),
    ms,
  );
  return png === LATE ? undefined : png;
}
