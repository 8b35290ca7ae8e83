import { once } from 'node:events';
import type { RequestHandler } from 'express';
import type { Row } from '@clickhouse/client';
import {
  bad,
  rejectUnknown,
  single,
  StoreUnavailableError,
  type ClickHouseClient,
  type Logger,
} from '@telemetry/platform';
import { checksSql, rowToCheck, type CheckHistoryRow } from '@telemetry/store';
import { monitorIdOf, rangeParams, statusesParam, tenantOf } from './params.js';

const KNOWN = new Set(['from', 'to', 'status', 'format']);
const CSV_HEADER = 'id,monitor_id,status,response_time,status_code,error,created_at\n';

function csvField(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export interface ExportRouteDeps {
  client: ClickHouseClient;
  database: string;
  logger: Logger;
  exportTimeoutMs: number;
}

/**
 * The whole history of a range, oldest first, streamed from ClickHouse to the client
 * row by row (it never holds the range in memory), as NDJSON (default) or CSV.
 */
export function exportRoute(deps: ExportRouteDeps): RequestHandler {
  return async (req, res) => {
    const monitorId = monitorIdOf(req);
    rejectUnknown(req, KNOWN);
    const format = single(req, 'format') ?? 'ndjson';
    if (format !== 'ndjson' && format !== 'csv') throw bad('format', 'must be ndjson or csv');
    const { from, to } = rangeParams(req);
    // The list's query without a page limit: same filters, same duplicate removal.
    const query = checksSql(deps.database, {
      tenantId: tenantOf(res),
      monitorId,
      limit: null,
      order: 'asc',
      from,
      to,
      statuses: statusesParam(req),
      cursor: undefined,
    });
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), deps.exportTimeoutMs);
    res.on('close', () => abort.abort()); // the client went away: stop reading
    let rs;
    try {
      rs = await deps.client.query({
        query,
        format: 'JSONEachRow',
        abort_signal: abort.signal,
        clickhouse_settings: { max_result_rows: '0', max_execution_time: Math.ceil(deps.exportTimeoutMs / 1000) },
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
              ? `${csvField(check.id)},${csvField(check.monitor_id)},${check.status},${check.response_time},${check.status_code},${check.error ?? ''},${check.created_at}\n`
              : `${JSON.stringify(check)}\n`;
        }
        if (!res.write(chunk)) await once(res, 'drain');
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
