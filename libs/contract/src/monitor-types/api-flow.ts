import { assertionProblems, parseValueSource } from '../assertions.js';
import { isForbiddenMonitorHeader, MONITOR_LIMITS } from '../limits.js';
import { placeholderProblems as fieldPlaceholderProblems, resolveUrl, urlOrigin } from '../placeholders.js';
import type { MonitorSettings } from '../types.js';
import type { Problem } from '../validators.js';
import type { MonitorTypeModule, Target } from './module.js';
import { stepUrlFormProblems, stepUrlTargetOrigin } from './step-url.js';

/** One request of an api_flow monitor, as the schema takes it (monitor-schema.ts `api_steps`). */
export type ApiStep = MonitorSettings['api_steps'][number];

/** How a step is named in timings and in a failure's detail: its `name`, else `step <n>` (from 1). */
export function stepLabel(step: Pick<ApiStep, 'name'>, index: number): string {
  return step.name ?? `step ${index + 1}`;
}

/** `step 2 "profile"` (or `step 2` for a step without a name): how a check's detail starts. */
export function stepPrefix(step: Pick<ApiStep, 'name'>, index: number): string {
  return step.name === undefined ? `step ${index + 1}` : `step ${index + 1} ${JSON.stringify(step.name)}`;
}

/** The scheme and authority of an absolute step URL (`https://api.example.com:8443`); '' for a path. */
export const stepUrlOrigin = urlOrigin;

/** A step's URL resolved against the flow's base URL, its placeholders filled (placeholders.ts resolveUrl). */
export const resolveStepUrl = resolveUrl;

/** A JSON pointer's token for `name` (RFC 6901): `~` and `/` escaped. */
function token(name: string): string {
  return name.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** Problems of one field's placeholders: names set by `variables` or extracted by an earlier step. */
function placeholderProblems(text: string, path: string, known: ReadonlySet<string>): Problem[] {
  return fieldPlaceholderProblems(
    text,
    path,
    known,
    (name) => `uses {{${name}}}, which no earlier step extracts and variables does not set`,
  );
}

/** Problems of a step's URL: its form, and no placeholder where it would choose the host. */
function stepUrlProblems(step: ApiStep, path: string, base: URL | undefined): Problem[] {
  return stepUrlFormProblems(step.url, path, base);
}

/**
 * Up to 10 HTTP requests in order (docs/api-flows.md): each step's URL, headers and body
 * may use {{variables}}, extract values from its answer for the next steps, and carry
 * assertions. The monitor's URL is the flow's base: a step's path resolves against it.
 */
export const apiFlowType: MonitorTypeModule<'api_flow'> = {
  type: 'api_flow',
  label: 'API flow (multi-step)',
  urlForm: 'an api_flow monitor has an http:// or https:// base URL',
  urlHint: 'http(s)://… (base of the steps)',
  fields: ['api_steps', 'variables', 'confirm_delay_ms'],
  defaults: {},
  problems(s, url) {
    const problems: Problem[] = [];
    if (url && url.protocol !== 'http:' && url.protocol !== 'https:')
      problems.push({ path: '/url', message: this.urlForm });
    const base = url && (url.protocol === 'http:' || url.protocol === 'https:') ? url : undefined;
    if (s.api_steps.length < 1 || s.api_steps.length > MONITOR_LIMITS.maxApiSteps) {
      problems.push({
        path: '/api_steps',
        message: `an api_flow monitor has 1 to ${MONITOR_LIMITS.maxApiSteps} steps`,
      });
    }
    // What a step may use: the variables, and what the steps before it extract.
    const known = new Set(Object.keys(s.variables));
    s.api_steps.forEach((step, i) => {
      const p = `/api_steps/${i}`;
      const urlProblems = stepUrlProblems(step, `${p}/url`, base);
      problems.push(...urlProblems);
      if (urlProblems.length === 0) {
        problems.push(...placeholderProblems(step.url.slice(stepUrlOrigin(step.url).length), `${p}/url`, known));
      }
      for (const [name, value] of Object.entries(step.headers ?? {})) {
        if (isForbiddenMonitorHeader(name)) {
          problems.push({
            path: `${p}/headers/${token(name)}`,
            message: 'is set by the connection itself and may not be set',
          });
        } else problems.push(...placeholderProblems(value, `${p}/headers/${token(name)}`, known));
      }
      const method = step.method ?? 'GET';
      if (step.body !== undefined && step.body !== null) {
        if (method === 'GET' || method === 'HEAD') {
          problems.push({ path: `${p}/body`, message: 'GET and HEAD steps send no body' });
        } else problems.push(...placeholderProblems(step.body, `${p}/body`, known));
      }
      problems.push(...assertionProblems(step.assertions ?? [], `${p}/assertions`, 'api_step'));
      for (const [name, source] of Object.entries(step.extract ?? {})) {
        const parsed = parseValueSource(source);
        if (!parsed.ok) problems.push({ path: `${p}/extract/${name}`, message: parsed.problem });
      }
      // Only the steps after this one may use what it extracts.
      for (const name of Object.keys(step.extract ?? {})) known.add(name);
    });
    return problems;
  },
  targets(s) {
    const targets: Target[] = [{ path: '/url', url: s.url }];
    s.api_steps.forEach((step, i) => {
      // Where the step resolves (a placeholder in the origin is a problem of its own).
      const origin = stepUrlTargetOrigin(s.url, step.url);
      if (origin !== '' && (stepUrlOrigin(step.url) !== '' || origin !== stepUrlTargetOrigin(s.url, '/'))) {
        targets.push({ path: `/api_steps/${i}/url`, url: `${origin}/` });
      }
    });
    return targets;
  },
};
