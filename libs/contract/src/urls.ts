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

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/**
 * 4 or 6 when `s` is an IPv4 (dotted quad) or IPv6 literal, 0 otherwise: node:net's
 * `isIP`, written for code that also runs in the browser (the console).
 */
export function ipVersion(s: string): 0 | 4 | 6 {
  if (IPV4.test(s)) return 4;
  if (!s.includes(':') || !/^[0-9A-Fa-f:.]+$/.test(s)) return 0;
  try {
    return new URL(`http://[${s}]/`).hostname !== '' ? 6 : 0;
  } catch {
    return 0;
  }
}
