import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parsesAsUrl } from './urls.js';

// NOTE: ajv-formats is CommonJS with a default export; under NodeNext its default
// import is the module object on some toolchains and the function on others.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as ((
  ajv: Ajv,
  formats: string[],
) => Ajv) & { get(name: string): (s: string) => boolean };

export { parsesAsUrl } from './urls.js';

/**
 * An ajv instance holding `schemas`, with the formats every schema of ours may use:
 * date-time, uuid, email, and uri (ajv-formats' RFC 3986 check, and a URL the services can parse).
 */
export function createAjv(schemas: readonly object[]): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, schemas: [...schemas] });
  addFormats(ajv, ['date-time', 'uuid', 'email']);
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
