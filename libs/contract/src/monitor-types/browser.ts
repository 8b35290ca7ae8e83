import { parse as parseCss } from 'css-what';
import { MONITOR_LIMITS, type BrowserAction } from '../limits.js';
import { placeholderProblems as fieldPlaceholderProblems, resolveUrl, urlOrigin as originOf } from '../placeholders.js';
import type { MonitorSettings } from '../types.js';
import type { Problem } from '../validators.js';
import type { MonitorTypeModule, Target } from './module.js';
import { stepUrlFormProblems, stepUrlTargetOrigin } from './step-url.js';

/** One step of a browser monitor, as the schema takes it (monitor-schema.ts `browser_steps`). */
export type BrowserStep = MonitorSettings['browser_steps'][number];

/** The properties of a browser step that depend on its action (timeout_ms: every action). */
export type BrowserStepField = 'selector' | 'value' | 'url' | 'text';

/**
 * The fields each action needs, and those it may have besides (timeout_ms: every action):
 * the API validates steps by it, and the console's step editor shows an action's fields by it.
 */
export const BROWSER_ACTION_FIELDS: {
  readonly [A in BrowserAction]: {
    readonly needs: readonly BrowserStepField[];
    readonly may: readonly BrowserStepField[];
    readonly why: string;
  };
} = {
  goto: { needs: ['url'], may: [], why: 'goto opens url (an absolute http(s) URL or a path)' },
  click: { needs: ['selector'], may: [], why: 'click needs the selector of what it clicks' },
  fill: { needs: ['selector', 'value'], may: [], why: 'fill types value into the field its selector names' },
  press: { needs: ['value'], may: ['selector'], why: 'press needs the key in value (Enter, Tab, Control+A)' },
  wait_for: { needs: [], may: ['selector', 'text'], why: 'wait_for needs a selector or a text to wait for' },
  assert_text: { needs: ['text'], may: ['selector'], why: 'assert_text needs the text the page must contain' },
  assert_url: { needs: ['url'], may: [], why: "assert_url needs what the page's URL must contain" },
};

/**
 * How a step is named in timings and in a failure's detail: `step 3 click "#submit"`
 * (numbered from 1; its selector, URL or text, never a fill's value: it may hold a secret).
 */
export function browserStepLabel(step: BrowserStep, index: number): string {
  const what =
    step.action === 'goto' || step.action === 'assert_url'
      ? step.url
      : step.action === 'press'
        ? step.value
        : (step.selector ?? step.text);
  const shown = what === undefined ? '' : ` ${JSON.stringify(what.length > 120 ? `${what.slice(0, 117)}...` : what)}`;
  return `step ${index + 1} ${step.action}${shown}`;
}

/**
 * A goto step's URL with its `{{name}}`s filled (each value percent-encoded: it cannot add
 * a path segment or choose the host), resolved against the monitor's URL. Undefined when
 * it does not parse.
 */
export function resolveBrowserUrl(base: string, stepUrl: string, values: ReadonlyMap<string, string>): URL | undefined {
  return resolveUrl(base, stepUrl, values).url;
}

/**
 * Problems of a selector. Selectors are CSS as Playwright's `css=` engine reads it (its
 * extra pseudo-classes such as `:has-text("Sign in")`, `:visible` and `:nth-match` are
 * CSS syntax too); the runner always runs them through that engine, so Playwright's other
 * engines (`text=`, `xpath=`, `>>` chains) are refused here rather than misread there.
 * The syntax is checked by css-what, a permissive CSS selector parser.
 */
export function selectorProblem(selector: string): string | undefined {
  if (/^\s*[a-z_-]+\s*=/i.test(selector) || selector.includes('>>') || selector.startsWith('/')) {
    return 'is a CSS selector (Playwright\'s CSS, e.g. #submit or button:has-text("Sign in")); Playwright\'s text=, xpath= and >> are not taken';
  }
  try {
    const parsed = parseCss(selector);
    if (parsed.length === 0 || parsed.some((s) => s.length === 0)) return 'is not a CSS selector';
  } catch (err) {
    return `is not a CSS selector: ${err instanceof Error ? err.message : String(err)}`;
  }
  return undefined;
}

/** Problems of the `{{name}}`s of a fill's value or a goto's URL: each a name of `variables`. */
function placeholderProblems(text: string, path: string, variables: ReadonlySet<string>): Problem[] {
  return fieldPlaceholderProblems(text, path, variables, (name) => `uses {{${name}}}, which variables does not set`);
}

/** Problems of a goto's URL: a path or an absolute http(s) URL, no placeholder in its origin. */
function gotoUrlProblems(url: string, path: string, base: URL | undefined, variables: ReadonlySet<string>): Problem[] {
  const form = stepUrlFormProblems(url, path, base);
  if (form.length > 0) return form;
  const origin = originOf(url);
  if (origin === '' && !url.startsWith('/')) {
    return [{ path, message: 'is a path (one leading /) or an absolute http:// or https:// URL' }];
  }
  return placeholderProblems(url.slice(origin.length), path, variables);
}

/** Problems of one step: the fields its action needs and takes, selectors, placeholders. */
function stepProblems(step: BrowserStep, p: string, base: URL | undefined, variables: ReadonlySet<string>): Problem[] {
  const problems: Problem[] = [];
  const spec = BROWSER_ACTION_FIELDS[step.action];
  for (const field of spec.needs) {
    if (step[field] === undefined) problems.push({ path: `${p}/${field}`, message: `is required: ${spec.why}` });
  }
  if (step.action === 'wait_for' && step.selector === undefined && step.text === undefined) {
    problems.push({ path: `${p}/selector`, message: spec.why });
  }
  for (const field of ['selector', 'value', 'url', 'text'] as const) {
    if (step[field] !== undefined && !spec.needs.includes(field) && !spec.may.includes(field)) {
      problems.push({ path: `${p}/${field}`, message: `is not used by ${step.action}` });
    }
  }
  if (step.selector !== undefined && (spec.needs.includes('selector') || spec.may.includes('selector'))) {
    const problem = selectorProblem(step.selector);
    if (problem) problems.push({ path: `${p}/selector`, message: problem });
  }
  if (step.action === 'goto' && step.url !== undefined) {
    problems.push(...gotoUrlProblems(step.url, `${p}/url`, base, variables));
  }
  if (step.action === 'fill' && step.value !== undefined) {
    problems.push(...placeholderProblems(step.value, `${p}/value`, variables));
  }
  if (step.action === 'press' && step.value !== undefined && !/^[A-Za-z0-9+_ -]{1,40}$/.test(step.value)) {
    problems.push({ path: `${p}/value`, message: 'is a key name such as Enter, Tab, ArrowDown or Control+A' });
  }
  return problems;
}

/**
 * A real browser (Debian's Chromium driven by playwright-core) opens the monitor's URL and
 * runs its declarative steps (docs/browser-checks.md). Only runners with a browser take it.
 */
export const browserType: MonitorTypeModule<'browser'> = {
  type: 'browser',
  label: 'Browser (Chromium)',
  urlForm: 'a browser monitor opens an http:// or https:// URL',
  urlHint: 'http(s)://… (the first page)',
  fields: ['browser_steps', 'variables', 'confirm_delay_ms'],
  defaults: {},
  problems(s, url) {
    const problems: Problem[] = [];
    const web = url && (url.protocol === 'http:' || url.protocol === 'https:');
    if (url && !web) problems.push({ path: '/url', message: this.urlForm });
    if (s.browser_steps.length < 1 || s.browser_steps.length > MONITOR_LIMITS.maxBrowserSteps) {
      problems.push({
        path: '/browser_steps',
        message: `a browser monitor has 1 to ${MONITOR_LIMITS.maxBrowserSteps} steps`,
      });
    }
    const variables = new Set(Object.keys(s.variables));
    s.browser_steps.forEach((step, i) => {
      problems.push(...stepProblems(step, `/browser_steps/${i}`, web ? url : undefined, variables));
    });
    return problems;
  },
  targets(s) {
    const targets: Target[] = [{ path: '/url', url: s.url }];
    s.browser_steps.forEach((step, i) => {
      if (step.action !== 'goto' || step.url === undefined) return;
      // Where the goto resolves (a placeholder in the origin is a problem of its own).
      const origin = stepUrlTargetOrigin(s.url, step.url);
      if (origin !== '' && (originOf(step.url) !== '' || origin !== stepUrlTargetOrigin(s.url, '/'))) {
        targets.push({ path: `/browser_steps/${i}/url`, url: `${origin}/` });
      }
    });
    return targets;
  },
};
