/**
 * The hot tail of `npm run bench:query` made warm before measuring: the first page of every
 * monitor asked once (16 at a time), as dashboards would, and the service's heap and tail
 * gauges read before and after: the memory the tail holds for these monitors.
 */
import { gauge } from '../common/report.js';
import type { DataSpec } from './data.js';
import { serviceHeaders, type ServiceTarget } from './requests.js';

export type TailFigures = Awaited<ReturnType<typeof warmTail>>;

export async function warmTail(service: ServiceTarget, spec: DataSpec, limit: number) {
  const metrics = async () => (await service.http.request('GET', '/metrics', {})).body;
  const before = await metrics();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < spec.monitors) {
        const m = next++;
        const r = await service.http.request(
          'GET',
          `/api/monitors/${spec.monitorId(m)}/checks?limit=${limit}`,
          serviceHeaders(service),
        );
        if (r.status !== 200) throw new Error(`warming the tail: ${spec.monitorId(m)} answered ${r.status}`);
      }
    }),
  );
  const warmSeconds = Math.round((performance.now() - started) / 100) / 10;
  const after = await metrics();
  const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
  const monitors = gauge(after, 'query_check_tail_monitors');
  const heapBeforeMiB = mib(gauge(before, 'nodejs_heap_size_used_bytes'));
  const heapAfterMiB = mib(gauge(after, 'nodejs_heap_size_used_bytes'));
  return {
    monitors,
    checks: gauge(after, 'query_check_tail_checks'),
    warmSeconds,
    heapBeforeMiB,
    heapAfterMiB,
    mibPerThousandMonitors: Math.round(((heapAfterMiB - heapBeforeMiB) / Math.max(1, monitors)) * 1000 * 10) / 10,
  };
}
