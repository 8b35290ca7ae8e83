import { once } from 'node:events';
import type { RequestHandler } from 'express';
import type { Row } from '@clickhouse/client';
import {
  AppError,
  bad,
  rejectUnknown,
  single,
  StoreUnavailableError,
  type ClickHouseClient,
  type Logger,
  type Slots,
} from '@telemetry/platform';
import { checksSql, rowToCheck, type CheckHistoryRow, type TableLayout } from '@telemetry/store';
import type { VerifiedKey } from '@telemetry/store';
import { monitorIdOf, rangeParams, statusesParam, tenantOf } from './params.js';

const KNOWN = new Set(['from', 'to', 'status', 'format']);
/** The seed's fields, then ours (added at the end, so that readers by position keep working). */
const CSV_HEADER = 'id,monitor_id,status,response_time,status_code,error,created_at,location,tls_days_left\n';

function csvField(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export interface ExportRouteDeps {
  /** The exports' own pool: a full pool never delays readiness or the list. */
  client: ClickHouseClient;
  database: string;
  layout: TableLayout;
  logger: Logger;
  /** Exports streaming now: EXPORT_MAX_CONCURRENT in all, EXPORT_MAX_PER_KEY per key. */
  slots: Slots;
  exportTimeoutMs: number;
  maxRangeDays: number;
  maxMemoryBytes: number;
  stallTimeoutMs: number;
  /** Unix seconds now (a parameter for tests). */
  now?: () => number;
}

/** Seconds a refused export is told to wait (exports last seconds to minutes). */
const EXPORT_RETRY_AFTER_S = 5;

/**
 * The whole history of a range, oldest first, streamed from ClickHouse to the client
 * row by row (it never holds the range in memory), as NDJSON (default) or CSV. Bounded
 * in every way a heavy read can hurt others: slots per key and in all, a range, the
 * query's time and memory, and a client that stops reading.
 */
export function exportRoute(deps: ExportRouteDeps): RequestHandler {
  const now = deps.now ?? ((): number => Math.floor(Date.now() / 1000));
  const maxRange = deps.maxRangeDays * 86_400;
  return async (req, res) => {
    const monitorId = monitorIdOf(req);
    rejectUnknown(req, KNOWN);
    const format = single(req, 'format') ?? 'ndjson';
    if (format !== 'ndjson' && format !== 'csv') throw bad('format', 'must be ndjson or csv');
    const range = rangeParams(req);
    const to = range.to ?? now();
    const from = range.from ?? Math.max(0, to - maxRange);
    if (to - from > maxRange) {
      throw bad('from', `an export covers at most ${deps.maxRangeDays} days (EXPORT_MAX_RANGE_DAYS); split the range`);
    }
    // The list's query without a page limit: same filters, same duplicate removal.
    const query = checksSql(deps.database, deps.layout, {
      tenantId: tenantOf(res),
      monitorId,
      limit: null,
      order: 'asc',
      from,
      to,
      statuses: statusesParam(req),
      cursor: undefined,
    });
    const slot = deps.slots.tryTake((res.locals.key as VerifiedKey).keyId);
    if ('refused' in slot) {
      throw new AppError(
        'RATE_LIMITED',
        slot.refused === 'owner'
          ? `this API key already runs ${deps.slots.perOwner} exports; retry when one ends`
          : 'the service runs as many exports as it allows; retry later',
        { limit: slot.refused === 'owner' ? 'EXPORT_MAX_PER_KEY' : 'EXPORT_MAX_CONCURRENT' },
        { 'Retry-After': String(EXPORT_RETRY_AFTER_S) },
      );
    }
    // Every response ends in 'close' (finished, failed or cut off): the one release.
    res.on('close', slot.release);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), deps.exportTimeoutMs);
    res.on('close', () => abort.abort()); // the client went away: stop reading
    let rs;
    try {
      rs = await deps.client.query({
        query,
        format: 'JSONEachRow',
        abort_signal: abort.signal,
        clickhouse_settings: {
          max_result_rows: '0',
          max_execution_time: Math.ceil(deps.exportTimeoutMs / 1000),
          max_memory_usage: String(deps.maxMemoryBytes),
        },
      });
    } catch (err) {
      clearTimeout(timer);
      deps.logger.warn('export query failed', { request_id: req.id, err: String(err) });
      throw new StoreUnavailableError();
    }
    res.status(200);
    res.setHeader('Content-Type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson');
    res.setHeader(
      'Content-Disposition',
      `attachment; filename="checks-${monitorId}.${format === 'csv' ? 'csv' : 'ndjson'}"`,
    );
    if (format === 'csv') res.write(CSV_HEADER);
    try {
      for await (const rows of rs.stream()) {
        let chunk = '';
        for (const row of rows as Row[]) {
          const check = rowToCheck(row.json<CheckHistoryRow>());
          chunk +=
            format === 'csv'
              ? `${csvField(check.id)},${csvField(check.monitor_id)},${check.status},${check.response_time},${check.status_code},${check.error ?? ''},${check.created_at},${check.location ?? ''},${check.tls_days_left ?? ''}\n`
              : `${JSON.stringify(check)}\n`;
        }
        // A client that stops reading is cut off, so it cannot hold a slot and a
        // ClickHouse connection until EXPORT_TIMEOUT_MS.
        if (!res.write(chunk)) {
          await once(res, 'drain', {
            signal: AbortSignal.any([abort.signal, AbortSignal.timeout(deps.stallTimeoutMs)]),
          });
        }
      }
      res.end();
    } catch (err) {
      // Headers are sent: the only honest signal left is a broken stream.
      deps.logger.warn('export aborted', { request_id: req.id, err: String(err) });
      res.destroy();
    } finally {
      clearTimeout(timer);
    }
  };
}
