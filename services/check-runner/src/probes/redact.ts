/**
 * Secrets out of a check's detail, for every probe that fills in variables (api_flow,
 * browser): what an answer or a page echoed of a value must not reach a check. Redact the
 * whole text first, then cut it to length: a value straddling the cut is masked too.
 */

/** Shorter values are not masked: `ok` or `12` would mask half the detail. */
export const MIN_REDACTED_LENGTH = 3;

/** The JSON string escape of `s`, without the quotes (`a"b` -> `a\"b`). */
function jsonEscaped(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/**
 * `text` with each of `values` shown as ****, in each form it is echoed in: as it is,
 * JSON-escaped once (an answer's JSON) and twice (a detail quoting that JSON,
 * `saw "…\\\"…"`), and percent-encoded (a URL or a form body), each of those forms too.
 */
export function redact(text: string, values: Iterable<string>): string {
  const forms = new Set<string>();
  for (const v of values) {
    if (v.length < MIN_REDACTED_LENGTH) continue;
    for (const plain of [v, encodeURIComponent(v)]) {
      const once = jsonEscaped(plain);
      forms.add(plain).add(once).add(jsonEscaped(once));
    }
  }
  // Longest first: a value inside another is masked with it.
  let out = text;
  for (const f of [...forms].sort((a, b) => b.length - a.length)) out = out.replaceAll(f, '****');
  return out;
}
