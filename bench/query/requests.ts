/**
 * The two ways in of `npm run bench:query`: requests to the query service (with an API
 * key) and the same SQL POSTed straight to ClickHouse's HTTP interface as the service's
 * client sends it; the paths and queries of a monitor's checks; and how an answer is
 * judged (status 200 and the expected number of rows or intervals).
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_TENANT } from '@telemetry/contract';
import type { ChecksQuery } from '@telemetry/store';
import { countOf, type HttpClient, type Outcome, type Reply } from '../../harness/load.js';

/** The query service, with an API key. */
export interface ServiceTarget {
  http: HttpClient;
  apiKey: string;
}

/**
 * ClickHouse's HTTP interface, as the service's client (@clickhouse/client) uses it: POST
 * of the SQL plus FORMAT, the same user, database and per-query settings, a query_id.
 */
export interface DirectTarget {
  http: HttpClient;
  user: string;
  password: string;
  database: string;
  /** The service's settings: max_execution_time from QUERY_TIMEOUT_MS, max_result_rows. */
  settings: Record<string, number>;
}

export function serviceHeaders(t: ServiceTarget): Record<string, string> {
  return { Authorization: `Bearer ${t.apiKey}` };
}

export function directHeaders(t: DirectTarget): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`${t.user}:${t.password}`).toString('base64')}` };
}

export function directPath(t: DirectTarget): string {
  const params = new URLSearchParams({ query_id: randomUUID() });
  for (const [k, v] of Object.entries(t.settings)) params.set(k, String(v));
  params.set('database', t.database);
  return `/?${params.toString()}`;
}

export function directBody(sql: string, format: 'JSONEachRow' | 'JSON'): string {
  return `${sql} \nFORMAT ${format}`;
}

export function direct(t: DirectTarget, sql: string, format: 'JSONEachRow' | 'JSON'): Promise<Reply> {
  return t.http.request('POST', directPath(t), directHeaders(t), directBody(sql, format));
}

// ---------------------------------------------------------------- answers

/** undefined when the service's check list has `rows` checks, else what is wrong. */
export function serviceChecksProblem(body: string, rows: number): string | undefined {
  if (!body.startsWith('{"success":true,"data":[')) return `unexpected body ${body.slice(0, 200)}`;
  const n = countOf(body, '"status_code":');
  return n === rows ? undefined : `${n} checks, expected ${rows}`;
}

/** undefined when a JSONEachRow answer has `rows` rows. */
export function directRowsProblem(body: string, rows: number): string | undefined {
  const n = countOf(body, '\n');
  return n === rows ? undefined : `${n} rows, expected ${rows}: ${body.slice(0, 200)}`;
}

export function serviceSummaryProblem(body: string, intervals: number): string | undefined {
  if (!body.startsWith('{"success":true,"data":{')) return `unexpected body ${body.slice(0, 200)}`;
  const n = countOf(body, '"start":');
  return n === intervals ? undefined : `${n} intervals, expected ${intervals}`;
}

export function directJsonProblem(body: string, rows: number): string | undefined {
  const m = /"rows":\s*(\d+)/.exec(body);
  if (!m || !body.includes('"totals":')) return `unexpected body ${body.slice(0, 200)}`;
  return Number(m[1]) === rows ? undefined : `${m[1]} rows, expected ${rows}`;
}

export function outcome(r: Reply, problem: (body: string) => string | undefined): Outcome {
  if (r.status !== 200) return { status: r.status, ok: false, problem: `status ${r.status}: ${r.body.slice(0, 200)}` };
  const p = problem(r.body);
  return p === undefined ? { status: 200, ok: true } : { status: 200, ok: false, problem: p };
}

// ---------------------------------------------------------------- paths and queries

export function checksPath(monitorId: string, params: Record<string, string> = {}): string {
  const qs = new URLSearchParams(params).toString();
  return `/api/monitors/${encodeURIComponent(monitorId)}/checks${qs ? `?${qs}` : ''}`;
}

export function firstPageQuery(monitorId: string, limit: number): ChecksQuery {
  return {
    tenantId: DEFAULT_TENANT,
    monitorId,
    limit,
    order: 'desc',
    from: undefined,
    to: undefined,
    statuses: [],
    cursor: undefined,
  };
}

/** Runs `fn` over `items`, `concurrency` at a time. */
export function json<T>(r: Reply, what: string): T {
  if (r.status !== 200) throw new Error(`${what}: status ${r.status}: ${r.body.slice(0, 300)}`);
  return JSON.parse(r.body) as T;
}

export interface ServiceList {
  data: { id: string; created_at: string }[];
  next_cursor: string | null;
}
