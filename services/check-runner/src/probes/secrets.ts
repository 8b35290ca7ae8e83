/** Values shorter than this are not looked for in a detail (they would mask ordinary words). */
const MIN_MASKED_LENGTH = 3;

/**
 * `text` with each of `values` shown as ****, as it is and in each of `encodings` (how the
 * probe may have sent or seen it: JSON-escaped, percent-encoded): what a check's detail
 * says of a secret (an api_flow's variables and extracted values, a browser's variables).
 * Longest first: a value inside another is masked with it.
 */
export function maskValues(
  text: string,
  values: Iterable<string>,
  encodings: readonly ((value: string) => string)[],
): string {
  const forms = new Set<string>();
  for (const v of values) {
    if (v.length < MIN_MASKED_LENGTH) continue;
    forms.add(v);
    for (const encode of encodings) forms.add(encode(v));
  }
  let out = text;
  for (const f of [...forms].sort((a, b) => b.length - a.length)) out = out.replaceAll(f, '****');
  return out;
}
