import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import type { Express, Request } from 'express';
import ipaddr from 'ipaddr.js';
import proxyAddr from 'proxy-addr';
import type { VarSpec } from './config.js';

/**
 * TRUSTED_PROXIES (docs/enrichment.md, "TRUSTED_PROXIES"): the proxies and load balancers
 * whose X-Forwarded-For an API believes. The walk itself is Express's `trust proxy`
 * machinery (proxy-addr, which Express 5 uses): from the connection's peer leftwards
 * through X-Forwarded-For, as long as each hop is trusted; the first untrusted hop (or
 * the leftmost entry) is the client. Nobody is trusted by default: the peer is the client.
 */
export interface TrustedProxies {
  /** The entries as configured: IP addresses, CIDR blocks, `loopback`, `linklocal`, `uniquelocal`. */
  readonly entries: readonly string[];
  /** Whether hop `addr` (the peer is hop 0) is trusted: an IP literal inside one of the entries. */
  readonly trust: (addr: string, hop: number) => boolean;
}

export const NO_TRUSTED_PROXIES: TrustedProxies = Object.freeze({
  entries: Object.freeze([]),
  trust: () => false,
});

/** proxy-addr's named ranges (loopback: 127.0.0.1/8 and ::1; linklocal; uniquelocal: 10/8, 172.16/12, 192.168/16, fc00::/7). */
const NAMED = new Set(['loopback', 'linklocal', 'uniquelocal']);
const PREFIX = /^\d{1,3}$/;

/** Why `entry` is not a TRUSTED_PROXIES entry, or undefined when it is one. */
function entryProblem(entry: string): string | undefined {
  if (NAMED.has(entry)) return undefined;
  const slash = entry.indexOf('/');
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 0) return 'is not an IP address';
  if (slash === -1) return undefined;
  const prefix = entry.slice(slash + 1);
  const max = family === 4 ? 32 : 128;
  if (!PREFIX.test(prefix) || Number(prefix) < 1 || Number(prefix) > max) {
    return `has a prefix length that is not 1 to ${max}`;
  }
  return undefined;
}

/**
 * TRUSTED_PROXIES' value: entries separated by commas or spaces. Throws (naming the first
 * bad entry) on anything but an IPv4/IPv6 address, a CIDR block (prefix 1 to 32 or 128;
 * `/0` would trust the whole internet) or one of proxy-addr's named ranges. Empty: nobody.
 */
export function parseTrustedProxies(raw: string): TrustedProxies {
  const entries = raw.split(/[\s,]+/).filter((e) => e !== '');
  for (const e of entries) {
    const problem = entryProblem(e);
    if (problem !== undefined) {
      throw new Error(
        `entry ${JSON.stringify(e.slice(0, 80))} ${problem}: give IP addresses and CIDR blocks (10.0.0.0/8, fd00::/8), or loopback, linklocal, uniquelocal`,
      );
    }
  }
  if (entries.length === 0) return NO_TRUSTED_PROXIES;
  const compiled = proxyAddr.compile(entries);
  return Object.freeze({
    entries: Object.freeze(entries),
    // NOTE: proxy-addr's own check (ipaddr.js) also reads forms such as `127.1` or
    // `0x7f.0.0.1`; a hop is only trusted when it is a literal Node itself reads.
    trust: (addr: string, hop: number) => isIP(addr) !== 0 && compiled(addr, hop),
  });
}

/** The TRUSTED_PROXIES variable (the gateway's and the query service's). */
export const trustedProxiesSpec = {
  trustedProxies: {
    name: 'TRUSTED_PROXIES',
    default: '',
    empty: NO_TRUSTED_PROXIES,
    doc: "proxies and load balancers in front of this service whose X-Forwarded-For is believed: IP addresses and CIDR blocks, comma-separated (or loopback, linklocal, uniquelocal); empty: nobody, the connection's peer is the client (docs/enrichment.md)",
    parse: parseTrustedProxies,
  } satisfies VarSpec<TrustedProxies>,
};

/**
 * An address as we carry it: IPv4 in dotted form (an IPv4-mapped IPv6 address such as
 * `::ffff:1.2.3.4` becomes `1.2.3.4`), IPv6 in its short lower-case form (RFC 5952)
 * without a zone id; undefined for anything that is not an IP literal.
 */
export function normalizeIp(addr: string | undefined): string | undefined {
  if (addr === undefined || addr === '' || addr.length > 100) return undefined;
  const zone = addr.indexOf('%');
  const text = zone === -1 ? addr : addr.slice(0, zone);
  const family = isIP(text);
  // The common case costs one isIP: a dotted IPv4 address is already as we keep it.
  if (family === 4) return text;
  if (family !== 6) return undefined;
  // A dual-stack socket's IPv4 peer (`::ffff:1.2.3.4`) without parsing the IPv6 form.
  if (text.length > 7 && text.slice(0, 7).toLowerCase() === '::ffff:' && isIP(text.slice(7)) === 4) {
    return text.slice(7);
  }
  const parsed = ipaddr.IPv6.parse(text);
  return parsed.isIPv4MappedAddress() ? parsed.toIPv4Address().toString() : parsed.toString();
}

/**
 * The request's client address: the connection's peer, or, when the peer is trusted,
 * the first untrusted hop of X-Forwarded-For read right to left (Express's walk). A hop
 * that is not an IP literal (`unknown`, `1.2.3.4:80`, an empty entry) ends the walk, and
 * then the peer is the answer: a trusted proxy that forwards garbage does not get to name
 * the client. Normalised (normalizeIp); undefined only when the peer is unknown (the
 * socket has gone).
 */
export function clientIp(req: IncomingMessage, proxies: TrustedProxies): string | undefined {
  const peer = normalizeIp(req.socket.remoteAddress);
  if (proxies.entries.length === 0 || peer === undefined) return peer;
  return normalizeIp(proxyAddr(req, proxies.trust)) ?? peer;
}

/**
 * Makes `app` trust `proxies` the Express way (`trust proxy`: also req.protocol from
 * X-Forwarded-Proto and req.hostname from X-Forwarded-Host, for a trusted peer only), and
 * `req.ip` the answer of clientIp: normalised, with a malformed hop meaning the peer.
 */
export function useTrustedProxies(app: Express, proxies: TrustedProxies): void {
  app.set('trust proxy', proxies.trust);
  // NOTE: Express's own `ip` getter (on the prototype app.request inherits from) would
  // return a malformed hop as is and keep the `::ffff:` of an IPv4 peer on a dual-stack
  // socket; this app's request prototype answers clientIp instead.
  Object.defineProperty(app.request, 'ip', {
    configurable: true,
    enumerable: true,
    get(this: Request) {
      return clientIp(this, proxies);
    },
  });
}
