import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createValidators, MONITOR_LIMITS } from '@telemetry/contract';
import { createLogger } from '@telemetry/platform';
import { BatchWriter, byteLimit, type RowSink } from '@telemetry/stream-consumer';
import {
  decodeScreenshot,
  MAX_SCREENSHOT_MESSAGE_BYTES,
  pngProblem,
  retentionRules,
  screenshotRowBytes,
  screenshotSql,
  streamTables,
  type ScreenshotRow,
  LOCAL_LAYOUT,
} from '@telemetry/store';
import { encodePng } from '../support/png.js';

const v = createValidators();
const png = encodePng(4, 3, (x, y) => [x * 60, y * 80, 200]);
const message = (over: Record<string, unknown> = {}): Buffer =>
  Buffer.from(
    JSON.stringify({
      check_id: 'chk_1',
      monitor_id: 'mon_1',
      tenant_id: 'ten_a',
      created_at: '2026-11-27T02:00:00Z',
      png_base64: png.toString('base64'),
      ...over,
    }),
  );
const reasonOf = (value: Buffer | null): string => {
  const d = decodeScreenshot(v, value);
  if (d.ok) throw new Error('decoded');
  return d.reason;
};

describe('check screenshots (unit)', () => {
  it('decodes a screenshot message into its row: the PNG as canonical base64, its size, the check time', () => {
    const d = decodeScreenshot(v, message());
    if (!d.ok) throw new Error(d.reason);
    expect(d.row).to.deep.include({
      tenant_id: 'ten_a',
      monitor_id: 'mon_1',
      check_id: 'chk_1',
      created_at: Date.UTC(2026, 10, 27, 2) / 1000,
      png_base64: png.toString('base64'),
      png_bytes: png.length,
    });
    expect(d.row.inserted_at).to.be.closeTo(Date.now() / 1000, 5);
  });

  it('refuses what is not a PNG of at most 500 KB in canonical base64, and what the schema refuses', () => {
    expect(
      reasonOf(message({ png_base64: Buffer.from('GIF89a-not-a-png-at-all-xxxxxxxxxxxxxx').toString('base64') })),
    ).to.match(/not a PNG/);
    // The signature alone, without the IHDR chunk after it.
    const bare = Buffer.concat([png.subarray(0, 8), Buffer.alloc(40)]);
    expect(reasonOf(message({ png_base64: bare.toString('base64') }))).to.match(/not a PNG/);
    // A character Buffer would skip, a stray one before the padding.
    expect(reasonOf(message({ png_base64: `${png.toString('base64').replace(/=+$/, '')}A` }))).to.match(
      /not canonical base64/,
    );
    expect(reasonOf(message({ png_base64: 'not base64 at all!' }))).to.match(/invalid screenshot message/);
    expect(reasonOf(message({ tenant_id: 'nobody' }))).to.match(/invalid screenshot message: \/tenant_id/);
    expect(reasonOf(message({ extra: 1 }))).to.match(/invalid screenshot message/);
    expect(reasonOf(Buffer.from('{'))).to.match(/^not JSON/);
    expect(reasonOf(null)).to.match(/^not JSON/);
    // 500 KB exactly is kept; one byte more is not (pngProblem; the schema's base64 bound is the same size).
    const padded = (n: number): Buffer => Buffer.concat([png, Buffer.alloc(n - png.length)]);
    expect(pngProblem(padded(MONITOR_LIMITS.maxScreenshotBytes))).to.equal(undefined);
    expect(pngProblem(padded(MONITOR_LIMITS.maxScreenshotBytes + 1))).to.match(/larger than 512000 bytes/);
    // The largest valid message fits the consumer's limit for the topic.
    const largest = message({ png_base64: padded(MONITOR_LIMITS.maxScreenshotBytes).toString('base64') });
    expect(decodeScreenshot(v, largest).ok).to.equal(true);
    expect(largest.length).to.be.at.most(MAX_SCREENSHOT_MESSAGE_BYTES);
  });

  it('reads one check of one tenant, every value escaped', () => {
    const sql = screenshotSql('telemetry', LOCAL_LAYOUT, {
      tenantId: "ten_a' OR 1=1",
      monitorId: 'mon\\1',
      checkId: 'chk_1',
    });
    expect(sql).to.contain("tenant_id = 'ten_a\\' OR 1=1'");
    expect(sql).to.contain("monitor_id = 'mon\\\\1'");
    expect(sql).to.contain("check_id = 'chk_1'");
    expect(sql).to.match(/FROM `?telemetry`?\.`?check_screenshots/);
    expect(sql).to.match(/LIMIT 1$/);
  });

  it('retention covers check_screenshots by SCREENSHOT_RETENTION_DAYS on its created_at', () => {
    expect(retentionRules({ events: 0, checks: 400, rollups: 0, screenshots: 30 })).to.deep.include({
      table: 'check_screenshots',
      days: 30,
      column: 'created_at',
    });
  });

  it('the batch writer caps inserts of a table by bytes, and flushes once the bytes are reached', async () => {
    const inserts: { table: string; rows: number }[] = [];
    const sink: RowSink = {
      insert: (table, rows) => {
        inserts.push({ table, rows: rows.length });
        return Promise.resolve();
      },
    };
    const tables = streamTables('db', LOCAL_LAYOUT);
    const row = (i: number): ScreenshotRow => ({
      tenant_id: 'ten_a',
      monitor_id: 'mon_1',
      check_id: `chk_${i}`,
      created_at: 0,
      png_base64: 'A'.repeat(1000),
      png_bytes: 750,
      inserted_at: 0,
    });
    const perRow = screenshotRowBytes(row(0));
    const w = new BatchWriter({
      sink,
      logger: createLogger({ service: 'test', level: 'silent' }),
      registry: new Registry(),
      maxRows: 1000,
      // Long: only the byte cap may flush in time.
      maxAgeMs: 60_000,
      retryMaxMs: 5,
      onRejected: () => Promise.resolve(),
      byteLimits: new Map([byteLimit(tables.check_screenshots, 3 * perRow, screenshotRowBytes)]),
    });
    // Seven rows in one write: inserts of 3, 3 and 1 (never more than the cap), at once.
    await w.write(
      tables.check_screenshots,
      Array.from({ length: 7 }, (_, i) => row(i)),
    );
    expect(inserts.map((i) => i.rows)).to.deep.equal([3, 3, 1]);
    // Rows written one by one flush when their bytes reach the cap, not after maxAgeMs.
    inserts.length = 0;
    const writes = [0, 1, 2].map((i) => w.write(tables.check_screenshots, [row(i)]));
    await Promise.all(writes);
    expect(inserts.map((i) => i.rows)).to.deep.equal([3]);
    // Other tables keep their row cap only.
    expect(
      w.chunksOf(
        tables.checks,
        Array.from({ length: 5 }, () => ({})),
      ),
    ).to.have.length(1);
    await w.stop();
  });
});
