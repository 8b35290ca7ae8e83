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
import type { IncomingHttpHeaders } from 'node:http';
import type { BrowserContext, Page, Route } from 'playwright-core';
import { BrowserBusyError, type BrowserPool } from '../browser-pool.js';
import { statusExpected } from './http.js';
import { maskValues } from './secrets.js';
import type { Probe, ProbeContext } from './types.js';
import { failed, passed, stopwatch, type ProbeResult } from './verdict.js';

/** A step without its own timeout_ms gets this (never past the monitor's timeout_ms overall). */
export const DEFAULT_STEP_TIMEOUT_MS = 5000;
/** Bytes of one response the runner hands to the page at most (a script, an image; the rest is cut). */
export const BROWSER_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

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

/** The first line of an error, without Playwright's `locator.click: ` prefix and call log. */
function reason(err: unknown): string {
  const first = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
  return first.replace(/^[a-zA-Z]+\.[a-zA-Z]+: /, '').trim() || 'failed';
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
    try {
      return await pool.withContext(m.timeout_ms, (context) => check(context, m, ctx));
    } catch (err) {
      if (err instanceof BrowserBusyError) return failed('timeout', waited(), { detail: err.message });
      return failed('network', waited(), { detail: scrub(`the browser failed: ${reason(err)}`, m.variables) });
    }
  };
}

async function check(context: BrowserContext, m: MonitorSettings, ctx: ProbeContext): Promise<BrowserProbeResult> {
  const elapsed = stopwatch();
  const deadline = Date.now() + m.timeout_ms;
  const remaining = (): number => Math.max(0, deadline - Date.now());
  const values = new Map(Object.entries(m.variables));
  const blocked: string[] = [];
  let mainFailure: CheckError | undefined;

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
    try {
      const answer = await httpCall({
        url: url.href,
        method: req.method(),
        headers,
        body: req.postData(),
        timeoutMs: Math.max(1, remaining()),
        // The page follows redirects itself, each hop intercepted and judged again.
        maxRedirects: 0,
        maxBodyBytes: BROWSER_MAX_RESPONSE_BYTES,
        keepBytes: BROWSER_MAX_RESPONSE_BYTES,
        signal: ctx.signal,
        policy: ctx.policy,
      });
      await route.fulfill({ status: answer.statusCode, headers: fulfilHeaders(answer.headers), body: answer.body });
    } catch (err) {
      const kind: CheckError = err instanceof HttpCallError ? err.kind : 'network';
      if (kind === 'target_not_allowed' && !blocked.includes(url.origin)) blocked.push(url.origin);
      if (req.isNavigationRequest() && req.frame().parentFrame() === null) mainFailure ??= kind;
      // The page may be gone already (the check ended): nothing to abort then.
      await route.abort(ABORT_REASON[kind] ?? 'failed').catch(() => undefined);
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
      failure = { error: 'unexpected_status', detail: `open ${m.url}: answered HTTP ${statusCode}` };
    }
    timings.navigation = await navigationTimings(page);
    firstVitals = await readVitals(page, true);
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    failure = {
      error: timedOut ? 'timeout' : (mainFailure ?? 'network'),
      detail: `open ${m.url}: ${timedOut ? `no load within timeout_ms (${m.timeout_ms} ms)` : reason(err)}`,
    };
  }

  for (const [i, step] of m.browser_steps.entries()) {
    if (failure) break;
    const label = browserStepLabel(step, i);
    const timeout = Math.min(step.timeout_ms ?? DEFAULT_STEP_TIMEOUT_MS, remaining());
    if (timeout <= 0) {
      failure = { error: 'timeout', detail: `${label}: the check's timeout_ms (${m.timeout_ms} ms) ran out` };
      break;
    }
    const took = stopwatch();
    try {
      await runStep(page, step, timeout, m.url, values);
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
  const lastVitals = await readVitals(page, false);
  const vitals = vitalsOf(firstVitals, lastVitals);
  if (vitals) timings.web_vitals = vitals;

  if (blocked.length > 0) {
    const more = blocked.length > 1 ? ` (and ${blocked.length - 1} other origins)` : '';
    failure = { error: 'request_blocked', detail: `request to ${blocked[0]} blocked by the egress policy${more}` };
  }
  const extra = { status_code: statusCode, ...(Object.keys(timings).length > 0 ? { timings } : {}) };
  if (!failure) return passed(m, responseTime, extra);
  const png = await screenshot(page);
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
        throw new AssertionFailure(`the URL ${page.url()} does not contain ${JSON.stringify(part)}`);
      }
      return;
    }
  }
}

function shorten(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

/** `text` with every variable's value (as typed, and percent-encoded) shown as ****: variables are secrets. */
export function scrub(text: string, variables: Record<string, string>): string {
  return maskValues(text, Object.values(variables), [encodeURIComponent]);
}

const NAVIGATION_SCRIPT = `(() => {
  const e = performance.getEntriesByType('navigation')[0];
  return e ? { ttfb: e.responseStart, dcl: e.domContentLoadedEventEnd, load: e.loadEventEnd } : null;
})()`;
const VITALS_NOW = `(() => { const v = window.__telemetryVitals; return v ? { ...v } : null; })()`;
/** After two frames, so that the first page's LCP has been painted and reported. */
const VITALS_SETTLED = `new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))
  .then(() => ${VITALS_NOW})`;

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

/** A PNG of the page at most maxScreenshotBytes: the viewport, else a smaller one, else none. */
async function screenshot(page: Page): Promise<Buffer | undefined> {
  const max = MONITOR_LIMITS.maxScreenshotBytes;
  try {
    const png = await page.screenshot({ type: 'png', timeout: 3000, animations: 'disabled' });
    if (png.length <= max) return png;
    await page.setViewportSize({ width: 640, height: 360 });
    const small = await page.screenshot({ type: 'png', timeout: 3000, animations: 'disabled', scale: 'css' });
    return small.length <= max ? small : undefined;
  } catch {
    return undefined;
  }
}
