import { Document, isMap, isScalar, visit } from 'yaml';
import {
  CONFIG_DOCUMENT_VERSION,
  CONFIG_SECTIONS,
  secretPinSchema,
  type ConfigDocument,
  type ConfigSection,
} from '@telemetry/contract';
import { ITEM_NAMES } from './file-schema.js';
import { dotted, pointerOf } from './yaml-file.js';

/** What GET /api/config answers. */
export interface ExportedConfig {
  document: ConfigDocument;
  /** Objects without a key, per section: not in the document. */
  unmanaged: Partial<Record<ConfigSection, number>>;
}

/** An environment variable the exported file names for a secret. */
export interface ExportedSecret {
  env: string;
  /** Where in the file (JSON pointer). */
  path: string;
}

const fingerprintPattern = new RegExp(secretPinSchema.properties.fingerprint.pattern);
const isPin = (v: unknown): v is { fingerprint: string } =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  Object.keys(v).length === 1 &&
  typeof (v as { fingerprint?: unknown }).fingerprint === 'string' &&
  fingerprintPattern.test((v as { fingerprint: string }).fingerprint);

/** TELEMETRY_<SECTION>_<KEY>_<PATH>, upper-cased, anything but letters and digits as `_`. */
export function envNameOf(section: ConfigSection, key: string, pointer: string): string {
  return ['TELEMETRY', section, key, pointer.slice(1)]
    .join('_')
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '_');
}

/**
 * The exported document as telemetry.yaml: each secret (a SecretPin the server wrote in
 * its place) becomes `{env: TELEMETRY_…, fingerprint: …}`, so that planning the file with
 * the variables unset keeps every stored secret, and a header comment lists the variables.
 */
export function exportYaml(exported: ExportedConfig): { text: string; secrets: ExportedSecret[] } {
  const secrets: ExportedSecret[] = [];
  const taken = new Set<string>();
  const out: Record<string, unknown> = { version: CONFIG_DOCUMENT_VERSION };
  for (const section of CONFIG_SECTIONS) {
    const items = exported.document[section];
    if (!items) continue;
    out[section] = items.map((item, i) => {
      const walk = (v: unknown, path: (string | number)[]): unknown => {
        if (isPin(v)) {
          let env = envNameOf(section, item.key, pointerOf(path));
          for (let n = 2; taken.has(env); n++) env = `${envNameOf(section, item.key, pointerOf(path))}_${n}`;
          taken.add(env);
          secrets.push({ env, path: pointerOf([section, i, ...path]) });
          return { env, fingerprint: v.fingerprint };
        }
        if (Array.isArray(v)) return v.map((x, j) => walk(x, [...path, j]));
        if (v !== null && typeof v === 'object') {
          return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, [...path, k])]));
        }
        return v;
      };
      // key first: it names the object
      const { key, ...rest } = item;
      return { key, ...(walk(rest, []) as object) };
    });
  }
  const doc = new Document(out);
  // {env, fingerprint} and lists of scalars (channels: [a, b]) on one line, as a person writes them
  visit(doc, {
    Seq(_, node) {
      let width = 0;
      for (const i of node.items) width += isScalar(i) ? String(i.value).length + 2 : 1000;
      const short = width <= 80;
      if (node.items.length > 0 && short) node.flow = true;
    },
    Map(_, node) {
      if (
        node.items.length > 0 &&
        node.items.every((p) => isScalar(p.key) && ['env', 'fingerprint'].includes(String(p.key.value))) &&
        isMap(node)
      ) {
        node.flow = true;
      }
    },
  });
  const header = [
    ' telemetry.yaml: written by `telemetry export` (docs/as-code.md); editors validate it with docs/telemetry.schema.json.',
  ];
  if (secrets.length > 0) {
    header.push(
      ' Secrets are environment variables. Unset, each keeps the stored value its fingerprint names;',
      ' set one to change that secret:',
      ...secrets.map((s) => `   ${s.env}  (${dotted(s.path)})`),
    );
  }
  const unmanaged = CONFIG_SECTIONS.flatMap((s) => {
    const n = exported.unmanaged[s] ?? 0;
    return n > 0 ? [`${n} ${n === 1 ? ITEM_NAMES[s] : s.replace(/_/g, ' ')}`] : [];
  });
  if (unmanaged.length > 0) {
    header.push(
      ` Not in this file, having no key: ${unmanaged.join(', ')}.`,
      ' `telemetry export --adopt` gives them keys (and puts them here).',
    );
  }
  doc.commentBefore = header.join('\n');
  return { text: doc.toString({ lineWidth: 0 }), secrets };
}
