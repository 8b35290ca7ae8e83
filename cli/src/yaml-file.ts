import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';

/**
 * telemetry.yaml parsed with its positions: every problem the CLI reports, its own or the
 * server's (a JSON pointer such as /monitors/2/interval_seconds), is mapped back to the
 * line and column of the node it is about.
 */

/** A problem with the file, where it is (1-based line and column). */
export interface FileProblem {
  file: string;
  line: number;
  column: number;
  /** JSON pointer into the document ('' for the whole file). */
  path: string;
  message: string;
}

export interface YamlFile {
  file: string;
  doc: Document.Parsed;
  lines: LineCounter;
  /** The document as plain data (aliases resolved; a repeated key: its last value). */
  data: unknown;
}

export function parseYaml(file: string, text: string): { parsed?: YamlFile; problems: FileProblem[] } {
  const lines = new LineCounter();
  // uniqueKeys: false: duplicate keys are reported by validate, with both positions, among its other problems.
  // merge: `<<: *defaults` shares settings between items, as YAML files commonly do.
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false, merge: true, prettyErrors: false });
  const problems = doc.errors.map((e): FileProblem => {
    const pos = e.linePos?.[0] ?? lines.linePos(e.pos[0]);
    const message = e.code === 'MULTIPLE_DOCS' ? 'the file holds one YAML document (no second ---)' : e.message;
    return { file, line: pos.line, column: pos.col, path: '', message: firstLine(message) };
  });
  if (problems.length > 0) return { problems };
  const data = doc.toJS({ maxAliasCount: 100 }) as unknown;
  if (data === null || data === undefined) {
    return {
      problems: [{ file, line: 1, column: 1, path: '', message: 'the file is empty: it needs at least version: 1' }],
    };
  }
  return { parsed: { file, doc, lines, data }, problems: [] };
}

const firstLine = (s: string): string => s.split('\n')[0]!.trim();

export const pointerOf = (segments: readonly (string | number)[]): string =>
  segments.map((s) => `/${String(s).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

export const segmentsOf = (pointer: string): string[] =>
  pointer === ''
    ? []
    : pointer
        .split('/')
        .slice(1)
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));

/** `monitors[2].headers.Authorization`: a pointer as the file's reader sees it. */
export function dotted(pointer: string): string {
  let out = '';
  for (const s of segmentsOf(pointer)) {
    if (/^\d+$/.test(s)) out += `[${s}]`;
    else out += out === '' ? s : /^[A-Za-z_][A-Za-z0-9_-]*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
  }
  return out;
}

interface Found {
  /** The deepest node the pointer reaches. */
  node: Node;
  /** The key node of the pair holding it, when it is a map's value. */
  key?: Node;
  /** Whether the whole pointer was found. */
  complete: boolean;
}

/** The node at `pointer` (or the deepest one on its way: a field the file leaves out is reported where its object is). */
export function findNode(y: YamlFile, pointer: string): Found {
  let node = y.doc.contents as Node | null;
  if (!node) return { node: y.doc as unknown as Node, complete: false };
  let key: Node | undefined;
  for (const seg of segmentsOf(pointer)) {
    const target = isAlias(node) ? (node.resolve(y.doc) as Node | undefined) : node;
    let next: Node | undefined;
    let nextKey: Node | undefined;
    if (isMap(target)) {
      // the last of repeated keys: the one the data holds
      for (const pair of target.items) {
        const k = isScalar(pair.key) ? String(pair.key.value) : undefined;
        if (k === seg) {
          next = (pair.value as Node | null) ?? (pair.key as Node);
          nextKey = pair.key as Node;
        }
      }
    } else if (isSeq(target) && /^\d+$/.test(seg)) {
      next = (target.items[Number(seg)] as Node | undefined) ?? undefined;
    }
    if (!next) return { node, ...(key ? { key } : {}), complete: false };
    node = next;
    key = nextKey;
  }
  return { node, ...(key ? { key } : {}), complete: true };
}

export function positionOf(y: YamlFile, node: Node | undefined): { line: number; column: number } {
  const offset = node?.range?.[0] ?? 0;
  const { line, col } = y.lines.linePos(offset);
  return { line, column: col };
}

/** A problem about the value at `pointer` (`at: 'key'`: about the key naming it, e.g. an unknown key). */
export function problemAt(y: YamlFile, pointer: string, message: string, at: 'value' | 'key' = 'value'): FileProblem {
  const found = findNode(y, pointer);
  const node = at === 'key' && found.complete && found.key ? found.key : found.node;
  return { file: y.file, ...positionOf(y, node), path: pointer, message };
}

/** Every map key repeated within its map, at the repeat, naming the first. */
export function duplicateKeys(y: YamlFile): FileProblem[] {
  const out: FileProblem[] = [];
  const walk = (node: unknown, pointer: (string | number)[]): void => {
    if (isMap(node)) {
      const first = new Map<string, Node>();
      for (const pair of node.items) {
        if (!isScalar(pair.key)) continue;
        const k = String(pair.key.value);
        if (k === '<<') continue; // merge keys: a map may merge several
        const seen = first.get(k);
        if (seen) {
          const p = positionOf(y, seen);
          out.push({
            file: y.file,
            ...positionOf(y, pair.key),
            path: pointerOf([...pointer, k]),
            message: `duplicate key "${k}" (first at line ${p.line}, column ${p.column})`,
          });
        } else first.set(k, pair.key);
        walk(pair.value, [...pointer, k]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...pointer, i]));
    }
  };
  walk(y.doc.contents, []);
  return out;
}
