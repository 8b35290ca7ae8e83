import { MONITOR_LIMITS, screenshotMessageSchema, type ScreenshotMessage, type Validators } from '@telemetry/contract';
import { sqlString, type MigrationsByVersion } from '@telemetry/platform';
import { nowSeconds, parseMessage, toMillis, type Decoded } from './rows.js';
import { tableRef, type TableLayout } from './layout.js';

/**
 * The `check_screenshots` table (docs/clickhouse.md, "check_screenshots"): the failure
 * screenshot of a browser check, one row per check, written by the stream consumer from
 * the screenshots topic and served by the query service at the check's `screenshot` path
 * (`GET /api/monitors/{id}/checks/{check_id}/screenshot`, the monitor's tenant only).
 *
 * The PNG is kept as base64 text (`png_base64`), as it travels on the topic: a String
 * column holding text passes both insert formats (RowBinary and JSONEachRow, which cannot
 * carry arbitrary bytes) and every JSON read unchanged. On current ClickHouse the column
 * is compressed with ZSTD, whose entropy coding takes back most of base64's third; 18.16
 * has no codecs (LZ4: about the base64 size). Not a public table: analysts' tenant copies
 * leave it out (images, up to 500 KB each; analysts.ts).
 *
 * Sorted by (tenant_id, monitor_id, check_id): the one read is a point lookup. A check
 * delivered twice writes two equal rows; the read takes one (LIMIT 1), merges keep one
 * (ReplacingMergeTree). Partitioned by day, so retention on 18.16 (whole partitions)
 * removes screenshots within a day of SCREENSHOT_RETENTION_DAYS (retention.ts).
 */
export const screenshotsMigrations: MigrationsByVersion = {
  20: (db, _name, engine) => [
    `CREATE TABLE IF NOT EXISTS ${db}.check_screenshots (
      tenant_id String, monitor_id String, check_id String, created_at DateTime('UTC'),
      png_base64 String${engine.modern ? ' CODEC(ZSTD(1))' : ''}, png_bytes UInt32, inserted_at DateTime('UTC')
    ) ENGINE = ReplacingMergeTree(inserted_at)
    PARTITION BY toYYYYMMDD(created_at)
    ORDER BY (tenant_id, monitor_id, check_id)`,
  ],
};

/** A `check_screenshots` row as inserted. DateTimes are unix seconds, UTC. */
export interface ScreenshotRow {
  tenant_id: string;
  monitor_id: string;
  check_id: string;
  /** The check's created_at (retention follows it). */
  created_at: number;
  /** The PNG, base64 (canonical: what Buffer.from(…, 'base64') decodes and encodes back to). */
  png_base64: string;
  /** The PNG's size in bytes (at most MONITOR_LIMITS.maxScreenshotBytes). */
  png_bytes: number;
  inserted_at: number;
}

/** Every PNG starts with these 8 bytes, then its IHDR chunk (length 13, type "IHDR"). */
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const IHDR = Buffer.from([0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);

/**
 * Why `png` is not a PNG we keep (undefined when it is one): the signature and the IHDR
 * chunk that must follow it, and at most MONITOR_LIMITS.maxScreenshotBytes. The rest of
 * the image is not parsed: the console shows it as an <img>, and the route serves it as
 * image/png with nosniff, so a browser never takes it for anything else.
 */
export function pngProblem(png: Buffer): string | undefined {
  if (png.length > MONITOR_LIMITS.maxScreenshotBytes) {
    return `larger than ${MONITOR_LIMITS.maxScreenshotBytes} bytes (${png.length})`;
  }
  if (png.length < 33 || !png.subarray(0, 8).equals(PNG_SIGNATURE) || !png.subarray(8, 16).equals(IHDR)) {
    return 'not a PNG (no PNG signature and IHDR chunk)';
  }
  return undefined;
}

/**
 * A screenshots-topic message as its row, or why it can never be written (dead-lettered
 * as `invalid`): the schema, created_at in range, base64 that decodes to exactly what it
 * says (no stray padding or characters Buffer would skip), and a PNG (pngProblem).
 */
export function decodeScreenshot(v: Validators, value: Buffer | null): Decoded<ScreenshotRow> {
  const parsed = parseMessage<ScreenshotMessage>(v.screenshotMessage, 'screenshot', value);
  if (!parsed.ok) return parsed;
  const m = parsed.m;
  const ms = toMillis(m.created_at);
  if (ms === null) return { ok: false, reason: 'created_at out of range' };
  const png = Buffer.from(m.png_base64, 'base64');
  if (png.toString('base64') !== m.png_base64) {
    return { ok: false, reason: 'invalid screenshot message: png_base64 is not canonical base64' };
  }
  const problem = pngProblem(png);
  if (problem !== undefined) return { ok: false, reason: `invalid screenshot message: png_base64 is ${problem}` };
  return {
    ok: true,
    row: {
      tenant_id: m.tenant_id,
      monitor_id: m.monitor_id,
      check_id: m.check_id,
      created_at: Math.floor(ms / 1000),
      png_base64: m.png_base64,
      png_bytes: png.length,
      inserted_at: nowSeconds(),
    },
  };
}

/**
 * The largest screenshots-topic message that can hold a valid screenshot: its base64 at
 * the schema's longest plus room for the other fields. The consumer takes messages up to
 * this on that topic whatever MAX_MESSAGE_BYTES says (Kafka's default 1 MB limit holds it).
 */
export const MAX_SCREENSHOT_MESSAGE_BYTES = screenshotMessageSchema.properties.png_base64.maxLength + 4096;

/** Weight of a row in a batch (the batch writer caps a batch of this table by bytes). */
export function screenshotRowBytes(row: ScreenshotRow): number {
  return row.png_base64.length + 200;
}

/** Which check's screenshot (each validated by the route; escaped here). */
export interface ScreenshotQuery {
  tenantId: string;
  monitorId: string;
  checkId: string;
}

/** The screenshot of one check of one tenant's monitor: one row or none. */
export function screenshotSql(database: string, layout: TableLayout, q: ScreenshotQuery): string {
  return `SELECT png_base64 FROM ${tableRef(database, 'check_screenshots', layout)}
    WHERE tenant_id = ${sqlString(q.tenantId)} AND monitor_id = ${sqlString(q.monitorId)}
      AND check_id = ${sqlString(q.checkId)}
    LIMIT 1`;
}

/** A row of screenshotSql. */
export interface ScreenshotReadRow {
  png_base64: string;
}
