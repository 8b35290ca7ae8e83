import type { Problem } from '../validators.js';

/**
 * What a step URL (an api_flow step's, a browser goto's) may hold, shared by both types.
 * The WHATWG URL parser reads `\` as `/` in http(s) URLs and drops tabs and newlines, so
 * `/\evil.example/x` or `/<TAB>/evil.example` would name another host while looking like a
 * path: such characters are refused anywhere in the URL, and a URL written relative must
 * resolve to the base's origin (another origin is written as an absolute URL, where it is
 * seen, judged and named).
 */
const FORBIDDEN = /[\s\\\p{Cc}]/u;

const FORM = 'is a path (one leading /) or an absolute http:// or https:// URL';

/** The scheme and authority of an absolute URL (`https://api.example.com:8443`); '' for a path. */
export function writtenOrigin(url: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url)?.[0] ?? '';
}

/** The URL with each `{{name}}` outside its origin replaced by a value that parses anywhere. */
function filled(url: string): string {
  const origin = writtenOrigin(url);
  return origin + url.slice(origin.length).replace(/\{\{[^{}]*\}\}/g, 'x');
}

/**
 * Problems of a step URL's form: no `\`, whitespace or control character; a path (one
 * leading /) or an absolute http(s) URL without a placeholder in its scheme, host or port;
 * parseable; a relative one staying on `base`'s origin.
 */
export function stepUrlFormProblems(url: string, path: string, base: URL | undefined): Problem[] {
  // A placeholder's braces may hold spaces (`{{ token }}`): its value goes in percent-encoded.
  if (FORBIDDEN.test(filled(url))) {
    return [{ path, message: 'may not contain \\, spaces, tabs, newlines or other control characters' }];
  }
  if (url.startsWith('//')) return [{ path, message: FORM }];
  const origin = writtenOrigin(url);
  if (origin.includes('{') || origin.includes('}')) {
    return [{ path, message: 'may use {{name}} in its path and query only, not in its scheme, host or port' }];
  }
  if (origin !== '' && !/^https?:\/\//i.test(origin)) return [{ path, message: FORM }];
  const within = base ?? new URL('http://base.invalid/');
  let resolved: URL;
  try {
    resolved = new URL(filled(url), within);
  } catch {
    return [{ path, message: 'is not a URL this server can parse' }];
  }
  if (origin === '' && resolved.origin !== within.origin) {
    return [
      {
        path,
        message: `resolves to ${resolved.origin}, not the monitor URL's origin: write another origin as an absolute http:// or https:// URL`,
      },
    ];
  }
  return [];
}

/**
 * The origin a step URL sends its request to, resolved against the base as the runner
 * resolves it (`https://api.example.com`); '' when it does not parse or a placeholder
 * stands in its origin.
 */
export function stepUrlTargetOrigin(base: string, url: string): string {
  if (writtenOrigin(url).includes('{')) return '';
  try {
    const resolved = new URL(filled(url), base);
    return resolved.protocol === 'http:' || resolved.protocol === 'https:' ? resolved.origin : '';
  } catch {
    return '';
  }
}
