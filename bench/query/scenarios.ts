/**
 * The scenarios of `npm run bench:query`: per scenario (first page, deep page, filtered
 * range, summaries by hour and by day), one operation for the service and one for
 * ClickHouse direct, each drawing its fixture at random and judging the answer.
 */
import { LOCAL_LAYOUT, checksSql, incidentSpansSql, summarySql } from '@telemetry/store';
import type { Op, Outcome } from '../../harness/load.js';
import type { DataSpec } from './data.js';
import { firstPage, type ChecksFixture, type Fixtures, type SummaryFixture } from './fixtures.js';
import {
  direct,
  directJsonProblem,
  directRowsProblem,
  outcome,
  serviceChecksProblem,
  serviceHeaders,
  serviceSummaryProblem,
  type DirectTarget,
  type ServiceTarget,
} from './requests.js';

export interface Scenario {
  key: 'first_page' | 'deep_page' | 'filtered' | 'summary_hour' | 'summary_day';
  title: string;
  service: Op;
  direct: Op;
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

export function checksOps(
  service: ServiceTarget,
  directTarget: DirectTarget,
  next: () => ChecksFixture,
): { service: Op; direct: Op } {
  return {
    service: async () => {
      const f = next();
      const r = await service.http.request('GET', f.servicePath, serviceHeaders(service));
      return outcome(r, (b) => serviceChecksProblem(b, f.serviceRows));
    },
    direct: async () => {
      const f = next();
      const r = await direct(directTarget, checksSql(directTarget.database, LOCAL_LAYOUT, f.query), 'JSONEachRow');
      return outcome(r, (b) => directRowsProblem(b, f.directRows));
    },
  };
}

function summaryOps(service: ServiceTarget, directTarget: DirectTarget, fixtures: SummaryFixture[]) {
  return {
    service: async (): Promise<Outcome> => {
      const f = pick(fixtures);
      const r = await service.http.request('GET', f.servicePath, serviceHeaders(service));
      return outcome(r, (b) => serviceSummaryProblem(b, f.intervals));
    },
    // The service's three queries (counts, quantiles, the incidents behind the SLA
    // figures), sent in parallel as the service sends them. The data has no incidents.
    direct: async (): Promise<Outcome> => {
      const f = pick(fixtures);
      const { tenantId, monitorId, from, to } = f.query;
      const sql = summarySql(directTarget.database, LOCAL_LAYOUT, f.query);
      const [c, q, i] = await Promise.all([
        direct(directTarget, sql.counts, 'JSONEachRow'),
        direct(directTarget, sql.quantiles, 'JSON'),
        direct(
          directTarget,
          incidentSpansSql(directTarget.database, LOCAL_LAYOUT, tenantId, monitorId, from, to),
          'JSONEachRow',
        ),
      ]);
      const oc = outcome(c, (b) => directRowsProblem(b, f.countRows));
      const oq = outcome(q, (b) => directJsonProblem(b, f.quantileRows));
      const oi = outcome(i, (b) => directRowsProblem(b, 0));
      return !oc.ok ? oc : !oq.ok ? oq : oi;
    },
  };
}

export function scenarios(
  spec: DataSpec,
  fx: Fixtures,
  service: ServiceTarget,
  directTarget: DirectTarget,
): Scenario[] {
  return [
    {
      key: 'first_page',
      title: `first page of ${fx.limit} checks, random monitor of ${spec.monitors.toLocaleString('en-US')}`,
      ...checksOps(service, directTarget, () => firstPage(spec, fx.limit)),
    },
    {
      key: 'deep_page',
      title: `page ${fx.deepPage + 1} (cursor followed ${fx.deepPage} pages in), ${fx.deep.length} monitors`,
      ...checksOps(service, directTarget, () => pick(fx.deep)),
    },
    {
      key: 'filtered',
      title: `${fx.filteredHours} h range + status=down (${fx.filteredRows[0]}-${fx.filteredRows[2]} rows), ${fx.filtered.length} monitors`,
      ...checksOps(service, directTarget, () => pick(fx.filtered)),
    },
    {
      key: 'summary_hour',
      title: `summary, interval=hour over 24 h (3 queries), ${fx.summaryHour.length} monitors`,
      ...summaryOps(service, directTarget, fx.summaryHour),
    },
    {
      key: 'summary_day',
      title: `summary, interval=day over 30 days (3 queries), ${fx.summaryDay.length} monitors`,
      ...summaryOps(service, directTarget, fx.summaryDay),
    },
  ];
}
