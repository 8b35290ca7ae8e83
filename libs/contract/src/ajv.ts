import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';

// NOTE: ajv-formats is CommonJS with a default export; under NodeNext its default
// import is the module object on some toolchains and the function on others.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as ((
  ajv: Ajv,
  formats: string[],
) => Ajv) & { get(name: string): (s: string) => boolean };

/**
 * A URL the WHATWG parser (the one every connection and check is made with) takes, host
 * included: tcp://, tls:// and dns:// hosts, which it keeps opaque, must also parse as an
 * http URL's host. ajv-formats' "uri" takes `http://1.2.3.4.5/` and `tcp://256.1.1.1:80`,
 * which `new URL` refuses: without this they reached the services' parsing as a 500.
 */
export function parsesAsUrl(raw: string): boolean {
  try {
    const url = new URL(raw);
    if (url.hostname !== '' && !['http:', 'https:'].includes(url.protocol)) new URL(`http://${url.hostname}/`);
    return true;
  } catch {
    return false;
  }
}

/**
 * An ajv instance holding `schemas`, with the formats every schema of ours may use:
 * date-time, uuid, and uri (ajv-formats' RFC 3986 check, and a URL the services can parse).
 */
export function createAjv(schemas: readonly object[]): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, schemas: [...schemas] });
  addFormats(ajv, ['date-time', 'uuid']);
  const uri = addFormats.get('uri');
  ajv.addFormat('uri', (s: string) => uri(s) && parsesAsUrl(s));
  return ajv;
}

export interface Problem {
  /** JSON pointer into the body, e.g. `/events/3/source`. */
  path: string;
  message: string;
}

/** Turns ajv's errors into short, stable, client-facing problems (at most `max`). */
export function describeErrors(errors: ErrorObject[] | null | undefined, max = 50): Problem[] {
  if (!errors) return [];
  return errors.slice(0, max).map((e) => {
    let path = e.instancePath || '/';
    let message = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') {
      const extra = (e.params as { additionalProperty: string }).additionalProperty;
      path = `${e.instancePath}/${extra}`;
      message = 'is not an allowed field';
    } else if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      path = `${e.instancePath}/${missing}`;
      message = 'is required';
    }
    return { path, message };
  });
}
