/**
 * The equivalence check of `npm run bench:query`, before measuring: for a few fixtures of
 * each scenario, the service answers exactly what the same SQL returns from ClickHouse.
 */
import { toIsoSeconds } from '@telemetry/contract';
import { LOCAL_LAYOUT, checksSql, summarySql, type CheckHistoryRow } from '@telemetry/store';
import type { DataSpec } from './data.js';
import { firstPage, type Fixtures } from './fixtures.js';
import { direct, json, serviceHeaders, type DirectTarget, type ServiceList, type ServiceTarget } from './requests.js';

/**
 * Before measuring: for a few fixtures of each scenario, the service's answer holds
 * exactly what the same SQL returns from ClickHouse (same checks in the same order,
 * same summary counts). Returns how many pairs were compared.
 */
export async function verifyEquivalence(
  spec: DataSpec,
  fx: Fixtures,
  service: ServiceTarget,
  directTarget: DirectTarget,
  samples = 5,
): Promise<number> {
  let compared = 0;
  const lists = [
    ...Array.from({ length: samples }, () => firstPage(spec, fx.limit)),
    ...fx.deep.slice(0, samples),
    ...fx.filtered.slice(0, samples),
  ];
  for (const f of lists) {
    const s = json<ServiceList>(
      await service.http.request('GET', f.servicePath, serviceHeaders(service)),
      f.servicePath,
    );
    const d = await direct(directTarget, checksSql(directTarget.database, LOCAL_LAYOUT, f.query), 'JSONEachRow');
    const rows = d.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as CheckHistoryRow);
    const want = rows.slice(0, fx.limit).map((r) => `${r.id}@${toIsoSeconds(Number(r.ts))}`);
    const got = s.data.map((c) => `${c.id}@${c.created_at}`);
    if (JSON.stringify(want) !== JSON.stringify(got) || rows.length > fx.limit !== (s.next_cursor !== null)) {
      throw new Error(`service and ClickHouse disagree on ${f.servicePath}`);
    }
    if (got.length !== f.serviceRows || rows.length !== f.directRows) {
      throw new Error(`${f.servicePath}: ${got.length}/${rows.length} rows, expected ${f.serviceRows}/${f.directRows}`);
    }
    compared++;
  }
  for (const f of [...fx.summaryHour.slice(0, samples), ...fx.summaryDay.slice(0, samples)]) {
    const s = json<{ data: { total: { checks: number }; intervals: { start: string; checks: number }[] } }>(
      await service.http.request('GET', f.servicePath, serviceHeaders(service)),
      f.servicePath,
    );
    const d = await direct(
      directTarget,
      summarySql(directTarget.database, LOCAL_LAYOUT, f.query).counts,
      'JSONEachRow',
    );
    const rows = d.body
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { t: number; n: string | number });
    const total = rows.reduce((a, r) => a + Number(r.n), 0);
    if (s.data.total.checks !== total || s.data.intervals.length !== f.intervals) {
      throw new Error(`service and ClickHouse disagree on ${f.servicePath}`);
    }
    compared++;
  }
  return compared;
}
