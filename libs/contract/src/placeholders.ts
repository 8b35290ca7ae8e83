import { VARIABLE_NAME_PATTERN } from './limits.js';
import type { Problem } from './validators.js';

/**
 * `{{name}}` placeholders in the fields of api_flow (and browser) steps (docs/api-flows.md,
 * "Placeholders"): a name of `variables` or of an earlier step's `extract`, with optional
 * spaces inside the braces (`{{ token }}`). Plain string work, no template engine: nothing
 * but a variable's value is ever inserted, and nothing of it is evaluated.
 */

/** `{{`, anything without braces, `}}`: what a placeholder looks like, well-formed or not. */
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
const NAME = new RegExp(VARIABLE_NAME_PATTERN);

/** One `{{…}}` of a text: its name (trimmed), and whether that is a variable's name. */
export interface Placeholder {
  /** As written, braces included. */
  readonly text: string;
  readonly name: string;
  readonly valid: boolean;
}

/** The placeholders of `text`, in order (repeats included). */
export function placeholdersOf(text: string): Placeholder[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => {
    const name = m[1]!.trim();
    return { text: m[0], name, valid: NAME.test(name) };
  });
}

/**
 * `text` with each `{{name}}` replaced by `encode(values[name])`. A name without a value
 * stays as written and is listed in `missing` (the API refuses such a monitor; a runner
 * meets one only in a row stored before that rule).
 */
export function substitute(
  text: string,
  values: ReadonlyMap<string, string>,
  encode: (value: string) => string = (v) => v,
): { text: string; missing: string[] } {
  const missing: string[] = [];
  const out = text.replace(PLACEHOLDER, (whole, inner: string) => {
    const value = values.get(inner.trim());
    if (value === undefined) {
      missing.push(inner.trim());
      return whole;
    }
    return encode(value);
  });
  return { text: out, missing };
}

/**
 * Problems of one field's placeholders: each must be well-formed and one of the `known`
 * names; `unknown` words a well-formed name that is not (each monitor type says where
 * names come from). Each name is reported once per field.
 */
export function placeholderProblems(
  text: string,
  path: string,
  known: ReadonlySet<string>,
  unknown: (name: string) => string,
): Problem[] {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  for (const p of placeholdersOf(text)) {
    const key = p.valid ? p.name : p.text;
    if (seen.has(key)) continue;
    seen.add(key);
    if (!p.valid) {
      problems.push({
        path,
        message: `${p.text} is no placeholder: a variable's name is letters, digits and _, not starting with a digit`,
      });
    } else if (!known.has(p.name)) {
      problems.push({ path, message: unknown(p.name) });
    }
  }
  return problems;
}

/** The scheme and authority of an absolute URL (`https://api.example.com:8443`); '' for a path. */
export function urlOrigin(url: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url)?.[0] ?? '';
}

/**
 * A step's URL with its placeholders filled, each value percent-encoded (a value cannot
 * add a path segment, a query item or a fragment, nor choose the host: the origin is left
 * as written), resolved against `base`: a path replaces the base's path and query, as a
 * link would. Undefined when the result does not parse; `missing` names placeholders
 * without a value.
 */
export function resolveUrl(
  base: string,
  stepUrl: string,
  values: ReadonlyMap<string, string>,
): { url: URL | undefined; missing: string[] } {
  const origin = urlOrigin(stepUrl);
  const rest = substitute(stepUrl.slice(origin.length), values, encodeURIComponent);
  try {
    return { url: new URL(origin + rest.text, base), missing: rest.missing };
  } catch {
    return { url: undefined, missing: rest.missing };
  }
}
