import { isIP } from 'node:net';
import type { EventMessage, IpStorage } from '@telemetry/contract';

/**
 * What `events` keeps of the client (docs/enrichment.md, "Columns"): which address and
 * user agent count (the event's own protocol's over the request's), how much of the
 * address is stored (the key's ip_storage), and the enrichment columns derived from
 * them. The look-ups themselves (GeoIP database, user-agent parser) are the stream
 * consumer's (services/stream-consumer/src/enrichment.ts): they come in as an Enricher.
 */

/** Where an address is: the GeoIP columns ('' where unknown). */
export interface GeoFields {
  /** ISO 3166-1 alpha-2, upper case. */
  readonly country: string;
  /** The first-level subdivision's name (a state, a region, a province). */
  readonly region: string;
  readonly city: string;
}

/**
 * What a device is, as `device_type` names it: '' when the event has no user agent,
 * `other` when it has one that names no known kind of device.
 */
export const DEVICE_TYPES = ['desktop', 'mobile', 'tablet', 'tv', 'bot', 'other', ''] as const;
export type DeviceType = (typeof DEVICE_TYPES)[number];

/** What a user agent says of its client: the user-agent columns ('' where unknown). */
export interface AgentFields {
  readonly browser: string;
  readonly browser_version: string;
  readonly os: string;
  readonly os_version: string;
  readonly device_type: DeviceType;
  /** 1: a crawler, a monitor, a script or another automated client; 0 otherwise. */
  readonly is_bot: 0 | 1;
}

/** The look-ups enrichment needs. Both are given valid input (a normalised address, a non-empty user agent). */
export interface Enricher {
  geo(ip: string, family: 4 | 6): GeoFields;
  agent(userAgent: string): AgentFields;
}

export const NO_GEO: GeoFields = Object.freeze({ country: '', region: '', city: '' });
export const NO_AGENT: AgentFields = Object.freeze({
  browser: '',
  browser_version: '',
  os: '',
  os_version: '',
  device_type: '',
  is_bot: 0,
});

/** An address as this module reads it: IPv4 dotted, or IPv6 in lower case; an IPv4-mapped IPv6 address is its IPv4 one. */
export interface ClientAddress {
  ip: string;
  family: 4 | 6;
}

/**
 * A syntactically valid address, normalised, or null. A dual-stack listener reports an
 * IPv4 client as `::ffff:a.b.c.d`: it is the IPv4 address, stored and looked up as one.
 */
export function parseClientAddress(raw: string | undefined): ClientAddress | null {
  if (raw === undefined || raw === '') return null;
  const family = isIP(raw);
  if (family === 4) return { ip: raw, family: 4 };
  if (family !== 6) return null;
  const g = ipv6Groups(raw);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    const [hi = 0, lo = 0] = [g[6], g[7]];
    return { ip: `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`, family: 4 };
  }
  return { ip: raw.toLowerCase(), family: 6 };
}

/** The eight 16-bit groups of a valid IPv6 address (an embedded IPv4 tail counts as two). */
function ipv6Groups(ip: string): number[] {
  const [head = '', tail] = ip.split('::');
  const part = (s: string): number[] => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (g.includes('.')) {
        const [a = 0, b = 0, c = 0, d = 0] = g.split('.').map(Number);
        out.push(a * 256 + b, c * 256 + d);
      } else out.push(parseInt(g, 16));
    }
    return out;
  };
  const h = part(head);
  if (tail === undefined) return h;
  const t = part(tail);
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

/**
 * The address with its host part zeroed: IPv4 to its /24 (`a.b.c.0`), IPv6 to its /48
 * (`x:y:z::`), enough for a country and usually a city, not for a household.
 */
export function truncateIp(a: ClientAddress): string {
  if (a.family === 4) return `${a.ip.slice(0, a.ip.lastIndexOf('.'))}.0`;
  const [x = 0, y = 0, z = 0] = ipv6Groups(a.ip);
  // 6to4 (2002::/16) carries the client's IPv4 address in its next 32 bits, all inside the
  // /48: keep that address's /24, as for IPv4.
  if (x === 0x2002) return `2002:${y.toString(16)}:${(z & 0xff00).toString(16)}::`;
  return `${x.toString(16)}:${y.toString(16)}:${z.toString(16)}::`;
}

/** What `client_ip` stores of an address under a key's ip_storage (absent: truncated). */
export function storedIp(a: ClientAddress | null, storage: IpStorage | undefined): string {
  if (a === null || storage === 'none') return '';
  return storage === 'full' ? a.ip : truncateIp(a);
}

/**
 * The address and user agent an event is about: what its own protocol reported
 * (`client_ip`, `user_agent`: a server-side call on behalf of a browser) over what the
 * gateway saw of the request (`request_ip`, `request_user_agent`). An invalid
 * `client_ip` falls back to the request's address.
 */
export function effectiveClient(e: EventMessage): { address: ClientAddress | null; userAgent: string } {
  return {
    address: parseClientAddress(e.client_ip) ?? parseClientAddress(e.request_ip),
    userAgent: e.user_agent ?? e.request_user_agent ?? '',
  };
}

/** An Enricher that knows nothing: every enrichment column stays '' (and is_bot 0). */
export const NO_ENRICHMENT: Enricher = Object.freeze({ geo: () => NO_GEO, agent: () => NO_AGENT });

/** The enrichment columns of a row that has none (rows made outside the consumer, in tests and tools). */
export const EMPTY_ENRICHMENT = Object.freeze({
  geo_country: '',
  geo_region: '',
  geo_city: '',
  browser: '',
  browser_version: '',
  os: '',
  os_version: '',
  device_type: '',
  is_bot: 0,
});
