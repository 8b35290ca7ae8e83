import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { v, type VarSpec } from './config.js';
import type { Logger } from './logger.js';
import { PeriodicJob } from './periodic.js';

/**
 * The egress policy: which addresses an outbound connection made on a customer's behalf
 * (a check, a redirect hop, a webhook) may reach (docs/operations.md, "Egress policy").
 *
 * Denied by default: every range that is not the public internet (loopback, RFC 1918,
 * link-local, CGNAT, unique-local IPv6, 0.0.0.0/8, multicast, broadcast, ...), in every
 * form: IPv4-mapped, -compatible and NAT64 IPv6 addresses are judged as the IPv4 address
 * they carry. Operators allow ranges (`10.1.0.0/16`) or single `host:port` pairs
 * (`127.0.0.1:8080`, `[::1]:9000`) with EGRESS_ALLOW. Some `host:port` pairs are denied
 * whatever is allowed: our own Kafka and ClickHouse (EgressPolicy's `alwaysDeny`), whose
 * names are resolved again every EGRESS_REFRESH_MS (OwnServicesRefresh). Ports in
 * EGRESS_DENY_PORTS (25 by default: a tcp check could otherwise speak SMTP to any mail
 * server) are denied on every address but an EGRESS_ALLOW `host:port` pair.
 *
 * The address judged is the one connected to: `pinnedLookup` resolves a name once,
 * judges the address and hands exactly that address to the socket, so a name whose DNS
 * answer changes between the check and the connect (rebinding) cannot switch it.
 */

/** Ranges that are not the public internet. */
export const DENIED_BY_DEFAULT = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // RFC 1918
  '100.64.0.0/10', // CGNAT (RFC 6598)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, cloud instance metadata
  '172.16.0.0/12', // RFC 1918
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // RFC 1918
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and 255.255.255.255 broadcast
  '::/128', // unspecified
  '::1/128', // loopback
  '100::/64', // discard
  '2001:db8::/32', // documentation
  'fc00::/7', // unique local
  'fe80::/10', // link-local
  'fec0::/10', // site-local (deprecated)
  'ff00::/8', // multicast
] as const;

export type EgressVerdict = { allowed: true } | { allowed: false; reason: string };

interface HostPort {
  address: string;
  port: number;
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
export function embeddedIpv4(v6: string): string | undefined {
  const words = expandIpv6(v6);
  if (!words) return undefined;
  const v4 = (hi: number, lo: number): string => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number): boolean => words.slice(from, to).every((w) => w === 0);
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated)
  if (zero(0, 5) && words[5] === 0xffff) return v4(words[6]!, words[7]!);
  if (zero(0, 4) && words[4] === 0xffff && words[5] === 0) return v4(words[6]!, words[7]!);
  // ::a.b.c.d (compatible; not :: and ::1, which are judged as IPv6)
  if (zero(0, 6) && (words[6] !== 0 || words[7]! > 1)) return v4(words[6]!, words[7]!);
  // 64:ff9b::a.b.c.d and 64:ff9b:1::/48 (NAT64)
  if (words[0] === 0x64 && words[1] === 0xff9b && zero(2, 6)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && words[2] === 1) return v4(words[6]!, words[7]!);
  // 2002:AABB:CCDD::/48 (6to4)
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return undefined;
}

/** The eight 16-bit words of an IPv6 address, or undefined if it is not one. */
function expandIpv6(addr: string): number[] | undefined {
  let a = addr.toLowerCase();
  a = unbracket(a);
  const zone = a.indexOf('%');
  if (zone >= 0) a = a.slice(0, zone);
  if (isIP(a) !== 6) return undefined;
  // A dotted IPv4 tail becomes two words.
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(a);
  if (dotted) {
    const [b1, b2, b3, b4] = dotted.slice(1).map(Number) as [number, number, number, number];
    a = `${a.slice(0, dotted.index)}${((b1 << 8) | b2).toString(16)}:${((b3 << 8) | b4).toString(16)}`;
  }
  const [head, tail] = a.split('::') as [string, string | undefined];
  const part = (s: string | undefined): number[] => (s ? s.split(':').map((w) => parseInt(w, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const fill = a.includes('::') ? 8 - h.length - t.length : 0;
  const words = [...h, ...Array<number>(fill).fill(0), ...t];
  return words.length === 8 ? words : undefined;
}

/**
 * The address of a URL host as an IP literal, in the form the WHATWG URL parser gives it
 * (`2130706433`, `127.1` and `0x7f.1` all become `127.0.0.1`; `[::ffff:127.0.0.1]`
 * becomes `[::ffff:7f00:1]`), or undefined when the host is a name.
 */
export function ipLiteralOf(url: URL): string | undefined {
  const host = unbracket(url.hostname);
  return isIP(host) ? host : undefined;
}

/** An IPv6 literal without its URL brackets; anything else as it is. */
export function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Where a URL of another scheme than http(s) (tcp://, tls://) connects, as an http URL:
 * its host then goes through the WHATWG host parser that http URLs get, so `127.1`,
 * `2130706433` and `0x7f.0.0.1` become the IP literal `127.0.0.1` they stand for, and
 * the policy judges them as such.
 */
export function connectUrl(url: URL): URL {
  if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  return new URL(`http://${url.hostname}:${portOf(url)}/`);
}

/** The port a URL connects to. */
export function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'tls:' ? 443 : 80;
}

export interface EgressPolicyOptions {
  /** EGRESS_ALLOW entries: CIDR ranges, or `host:port` with an IP literal host. */
  allow?: readonly string[];
  /** `host:port` pairs (IP literals) denied whatever `allow` says: our own services. */
  alwaysDeny?: readonly HostPort[];
  /** EGRESS_DENY_PORTS: ports denied on every address but an `allow` `host:port` pair. */
  denyPorts?: readonly number[];
}

export class EgressPolicy {
  private readonly denied = new BlockList();
  private readonly allowedRanges = new BlockList();
  private readonly allowedPairs: HostPort[] = [];
  private deniedPairs: HostPort[];
  private readonly deniedPorts: ReadonlySet<number>;

  constructor(opts: EgressPolicyOptions = {}) {
    for (const cidr of DENIED_BY_DEFAULT) addRange(this.denied, cidr);
    for (const entry of opts.allow ?? []) {
      const pair = parseHostPort(entry);
      if (pair) this.allowedPairs.push(pair);
      else addRange(this.allowedRanges, entry);
    }
    this.deniedPairs = canonicalPairs(opts.alwaysDeny ?? []);
    this.deniedPorts = new Set(opts.denyPorts ?? []);
  }

  /** Replaces the `alwaysDeny` pairs (our own services, resolved again: OwnServicesRefresh). */
  setAlwaysDeny(pairs: readonly HostPort[]): void {
    this.deniedPairs = canonicalPairs(pairs);
  }

  /** May a connection go to `address` (an IP literal), port `port`? */
  check(address: string, port: number): EgressVerdict {
    const ip = canonical(address);
    if (this.deniedPairs.some((p) => p.address === ip && p.port === port)) {
      return { allowed: false, reason: `${address}:${port} is one of our own services` };
    }
    if (this.allowedPairs.some((p) => p.address === ip && p.port === port)) return { allowed: true };
    if (this.deniedPorts.has(port)) return portDenied(port);
    const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowedRanges.check(ip, family)) return { allowed: true };
    if (this.denied.check(ip, family)) return { allowed: false, reason: `${address} is in a denied range` };
    return { allowed: true };
  }

  /**
   * The verdict on what a URL says before any lookup (the API refuses those at once): its
   * host when it is an IP literal, its port when EGRESS_DENY_PORTS denies it; undefined
   * when the host is a name on another port (judged when the connection is made).
   */
  checkUrl(url: URL): EgressVerdict | undefined {
    const ip = ipLiteralOf(url);
    if (ip !== undefined) return this.check(ip, portOf(url));
    return this.deniedPorts.has(portOf(url)) ? portDenied(portOf(url)) : undefined;
  }

  /**
   * A `lookup` for http.request / net.connect that resolves `hostname` once, keeps the
   * first address the policy allows for `port`, and hands the socket exactly that one;
   * when none is allowed it fails with `code` EGRESS_DENIED.
   */
  pinnedLookup(port: number, resolve: typeof dnsLookup = dnsLookup) {
    return (
      hostname: string,
      options: { all?: boolean; family?: number | string },
      callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
    ): void => {
      const host = unbracket(hostname);
      const done = (addresses: LookupAddress[]): void => {
        const pick = addresses.find((a) => this.check(a.address, port).allowed);
        if (!pick) {
          callback(egressDenied(`${hostname}:${port}`), options.all ? [] : '', 0);
          return;
        }
        if (options.all) callback(null, [pick]);
        else callback(null, pick.address, pick.family);
      };
      const literal = isIP(host);
      if (literal) {
        done([{ address: host, family: literal }]);
        return;
      }
      resolve(host, { all: true }, (err, addresses) => {
        if (err) callback(err, options.all ? [] : '', 0);
        else done(addresses);
      });
    };
  }
}

/** The error a denied connection fails with (code EGRESS_DENIED). */
export function egressDenied(target: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`the egress policy does not allow ${target}`);
  err.code = 'EGRESS_DENIED';
  return err;
}

function portDenied(port: number): EgressVerdict {
  return { allowed: false, reason: `port ${port} is denied (EGRESS_DENY_PORTS)` };
}

function canonicalPairs(pairs: readonly HostPort[]): HostPort[] {
  return pairs.map((p) => ({ ...p, address: canonical(p.address) }));
}

/** An address judged as the IPv4 address it carries, if any; IPv6 lower-cased. */
function canonical(address: string): string {
  const a = unbracket(address);
  if (isIP(a) === 6) return embeddedIpv4(a) ?? a.toLowerCase();
  return a;
}

function addRange(list: BlockList, cidr: string): void {
  const slash = cidr.lastIndexOf('/');
  const net = slash < 0 ? cidr : cidr.slice(0, slash);
  const family = isIP(net);
  if (!family) throw new Error(`not an IP range: ${JSON.stringify(cidr)}`);
  const prefix = slash < 0 ? (family === 6 ? 128 : 32) : Number(cidr.slice(slash + 1));
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
    throw new Error(`not an IP range: ${JSON.stringify(cidr)}`);
  }
  list.addSubnet(net, prefix, family === 6 ? 'ipv6' : 'ipv4');
}

/** `1.2.3.4:80` or `[::1]:80`; undefined for anything else (a range). */
export function parseHostPort(entry: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):(\d{1,5})$/.exec(entry.trim());
  if (!m) return undefined;
  const address = m[1] ?? m[2]!;
  const port = Number(m[3]);
  if (!isIP(address) || port < 1 || port > 65535) throw new Error(`not a host:port: ${JSON.stringify(entry)}`);
  return { address, port };
}

/** Checks EGRESS_ALLOW entries (for config validation): throws on the first bad one. */
export function parseEgressAllow(raw: string): string[] {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const e of entries) {
    if (!parseHostPort(e)) addRange(new BlockList(), e);
  }
  return entries;
}

/** EGRESS_DENY_PORTS: port numbers, comma-separated ('' for none). */
export function parsePorts(raw: string): number[] {
  const ports = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const n = /^\d{1,5}$/.test(s) ? Number(s) : NaN;
      if (!(n >= 1 && n <= 65_535)) throw new Error(`not a port: ${JSON.stringify(s)}`);
      return n;
    });
  return [...new Set(ports)];
}

export const egressSpec = {
  egressAllow: {
    name: 'EGRESS_ALLOW',
    default: '',
    doc: 'what checks and webhooks may reach beyond the public internet: CIDR ranges or IP:port pairs, comma-separated (e.g. 10.1.0.0/16,127.0.0.1:8080); Kafka and ClickHouse stay denied',
    parse: parseEgressAllow,
  } satisfies VarSpec<string[]>,
  egressDenyPorts: {
    name: 'EGRESS_DENY_PORTS',
    default: '25',
    doc: 'ports checks and webhooks may not connect to on any address, comma-separated (25: no SMTP to mail servers); an EGRESS_ALLOW IP:port pair is still allowed; empty for none',
    parse: parsePorts,
  } satisfies VarSpec<number[]>,
  egressRefreshMs: v.int(
    'EGRESS_REFRESH_MS',
    60_000,
    'how often the names of our own Kafka and ClickHouse (denied to checks and webhooks) are resolved again',
    1000,
    3_600_000,
  ),
};

/** The addresses of one of our own services (`host:port` or a URL); undefined when its name does not resolve. */
async function resolveService(target: string, resolve: typeof dnsLookup): Promise<HostPort[] | undefined> {
  const url = new URL(/^[a-z]+:\/\//i.test(target) ? target : `tcp://${target}`);
  const port = portOf(url);
  const host = unbracket(url.hostname);
  const addresses = isIP(host)
    ? [host]
    : await new Promise<string[] | undefined>((ok) =>
        resolve(host, { all: true }, (err, list) => ok(err ? undefined : list.map((a) => a.address))),
      );
  return addresses?.map((address) => ({ address, port }));
}

/**
 * The `host:port` pairs of our own services (`host:port` or URLs, e.g. KAFKA_BROKERS and
 * CLICKHOUSE_URL), for EgressPolicy's `alwaysDeny`. Resolved again on every `resolve()`,
 * since a Kafka broker or ClickHouse rescheduled on Kubernetes comes back at a new
 * address; a name that does not resolve this time keeps the addresses it had (a DNS
 * failure must not let checks reach what it hid).
 */
export class OwnServices {
  private readonly known = new Map<string, HostPort[]>();

  constructor(
    private readonly targets: readonly string[],
    private readonly lookup: typeof dnsLookup = dnsLookup,
  ) {}

  async resolve(): Promise<HostPort[]> {
    for (const t of this.targets) {
      const pairs = await resolveService(t, this.lookup);
      if (pairs) this.known.set(t, pairs);
    }
    return [...this.known.values()].flat();
  }
}

/** A service's egress policy, and the job that keeps its own services' addresses current. */
export interface ServiceEgress {
  policy: EgressPolicy;
  /** Resolves Kafka's, ClickHouse's and PostgreSQL's names again every EGRESS_REFRESH_MS: a Component. */
  refresh: PeriodicJob;
}

/** `host:port` of a postgres:// URL (port 5432 when it names none), without its credentials. */
export function postgresHostPort(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}`;
}

/**
 * A service's policy: EGRESS_ALLOW and EGRESS_DENY_PORTS, with Kafka, ClickHouse, the
 * registry's PostgreSQL and `alsoDeny` (e.g. the service's own address) denied whatever it allows; their names are
 * resolved now and again by `refresh`.
 */
export async function egressPolicyFor(
  config: {
    egressAllow: readonly string[];
    egressDenyPorts: readonly number[];
    egressRefreshMs: number;
    kafkaBrokers: readonly string[];
    clickhouseUrl: string;
    /** The registry's PostgreSQL (DATABASE_URL): denied too; only its host and port are kept. */
    databaseUrl?: string;
  },
  logger: Logger,
  alsoDeny: readonly string[] = [],
  lookup: typeof dnsLookup = dnsLookup,
): Promise<ServiceEgress> {
  const own = new OwnServices(
    [
      ...config.kafkaBrokers,
      config.clickhouseUrl,
      ...(config.databaseUrl ? [postgresHostPort(config.databaseUrl)] : []),
      ...alsoDeny,
    ],
    lookup,
  );
  const policy = new EgressPolicy({
    allow: config.egressAllow,
    alwaysDeny: await own.resolve(),
    denyPorts: config.egressDenyPorts,
  });
  const refresh = new PeriodicJob(
    'egress-own-services',
    config.egressRefreshMs,
    async () => policy.setAlwaysDeny(await own.resolve()),
    logger,
  );
  return { policy, refresh };
}
