/**
 * Where each element of the top-level object's array `field` lies in `text`, a JSON text
 * that JSON.parse accepted: [start, end) per element, in order; undefined when the top
 * level has no such array. With a repeated key, the last one's (as JSON.parse keeps).
 *
 * Segment's 32 KB limit is on a message as the client serialised it: Python's json.dumps
 * writes `", "` and `": "`, and a client may escape what JSON.stringify would not, so the
 * size of a re-serialised message is not the size the client measured and sent.
 */
export function arrayElementSpans(text: string, field: string): [number, number][] | undefined {
  let depth = 0;
  let lastKeyText: string | undefined; // the last string read at depth 1
  let key: string | undefined; // the key whose value comes next at depth 1
  let spans: [number, number][] | undefined;
  let result: [number, number][] | undefined;
  let start = -1; // start of the current element, -1 between elements
  let lastSolid = -1; // index of the last non-whitespace character
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 32 || c === 9 || c === 10 || c === 13) continue;
    const inArray = spans !== undefined && depth === 2;
    if (inArray && start < 0 && c !== 44 /* , */ && c !== 93 /* ] */) start = i;
    if (c === 34 /* " */) {
      const from = i;
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 92 /* \ */) i++;
        else if (s === 34) break;
      }
      if (depth === 1) lastKeyText = text.slice(from, i + 1);
      lastSolid = i;
      continue;
    }
    if (c === 58 /* : */ && depth === 1) {
      key = lastKeyText === undefined ? undefined : (JSON.parse(lastKeyText) as string);
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (depth === 1 && c === 91 && key === field) {
        spans = [];
        start = -1;
      }
      depth++;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      if (inArray && c === 93) {
        if (start >= 0) spans!.push([start, lastSolid + 1]);
        result = spans;
        spans = undefined;
      }
      depth--;
    } else if (c === 44 && inArray) {
      spans!.push([start, lastSolid + 1]);
      start = -1;
    }
    lastSolid = i;
  }
  return result;
}
