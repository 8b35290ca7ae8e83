/**
 * The fixed-rate stage of `npm run bench:query`: the first page at BENCH_RATE req/s on both
 * paths, paced open loop (judged from each request's scheduled send time) and autocannon's
 * overallRate (its own percentiles kept beside the raw response times), pooled into one
 * summary per method and side.
 */
import { LOCAL_LAYOUT, checksSql } from '@telemetry/store';
import { autocannon, latencyFigures, paced, Recorder, type LoadResult } from '../../harness/load.js';
import type { DataSpec } from './data.js';
import { firstPage, type Fixtures } from './fixtures.js';
import type { Measurements } from './measure.js';
import { cfg, PACED_MAX_IN_FLIGHT } from './options.js';
import { summarize, type RateSummary } from './report.js';
import {
  directBody,
  directHeaders,
  directPath,
  directRowsProblem,
  serviceChecksProblem,
  serviceHeaders,
  type DirectTarget,
  type ServiceTarget,
} from './requests.js';
import { checksOps } from './scenarios.js';

/**
 * autocannon with `overallRate`: each connection may send rate/connections requests per
 * one-second window. `next()` gives each request (path, body, and how to judge the answer);
 * the result's latencies are the raw response times autocannon measured (no correction).
 */
async function autocannonRate(o: {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  next: () => { path: string; body?: string; expect: (body: string) => string | undefined };
}): Promise<{ result: LoadResult; reported: { p50: number; p99: number; rps: number } }> {
  const rec = new Recorder();
  const inst = autocannon({
    url: o.url,
    connections: cfg.rateConnections,
    duration: cfg.seconds,
    overallRate: cfg.rate,
    timeout: 30,
    headers: o.headers,
    requests: [
      {
        method: o.method,
        // One request in flight per connection: its context carries the request's expectation
        // from setupRequest to onResponse (autocannon renews the context before each request).
        setupRequest: (req, context) => {
          const n = o.next();
          context.expect = n.expect;
          return { ...req, method: o.method, path: n.path, ...(n.body === undefined ? {} : { body: n.body }) };
        },
        onResponse: (status, body, context) => {
          const problem = status === 200 ? context.expect?.(body) : `status ${status}`;
          rec.add({ status, ok: problem === undefined, ...(problem === undefined ? {} : { problem }) });
        },
      },
    ],
  });
  inst.on('response', (_client: unknown, _status: number, _bytes: number, latency: number) =>
    rec.r.latencies.push(latency),
  );
  const res = await inst;
  rec.r.seconds = res.duration;
  rec.r.errors += res.errors;
  return { result: rec.r, reported: { p50: res.latency.p50, p99: res.latency.p99, rps: res.requests.average } };
}

/** Fixed rate, first page: paced open loop and autocannon's overallRate, `cfg.rounds` rounds of each. */
export async function fixedRate(
  m: Measurements,
  spec: DataSpec,
  fx: Fixtures,
  serviceTarget: ServiceTarget,
  directTarget: DirectTarget,
  urls: { service: string; direct: string },
): Promise<RateSummary[]> {
  const reported = new Map<string, { p50: number; p99: number; rps: number }[]>();
  const first = checksOps(serviceTarget, directTarget, () => firstPage(spec, fx.limit));
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const side of ['service', 'direct'] as const) {
      await m.measure(`paced/${side}`, 'first_page_paced', side, round, () =>
        paced(first[side], cfg.rate, cfg.seconds, PACED_MAX_IN_FLIGHT),
      );
    }
    for (const side of ['service', 'direct'] as const) {
      await m.measure(`autocannon/${side}`, 'first_page_autocannon', side, round, async () => {
        const ac = await autocannonRate({
          url: urls[side],
          method: side === 'service' ? 'GET' : 'POST',
          headers: side === 'service' ? serviceHeaders(serviceTarget) : directHeaders(directTarget),
          next: () => {
            const f = firstPage(spec, fx.limit);
            return side === 'service'
              ? { path: f.servicePath, expect: (b) => serviceChecksProblem(b, f.serviceRows) }
              : {
                  path: directPath(directTarget),
                  body: directBody(checksSql(directTarget.database, LOCAL_LAYOUT, f.query), 'JSONEachRow'),
                  expect: (b) => directRowsProblem(b, f.directRows),
                };
          },
        });
        reported.set(`autocannon/${side}`, [...(reported.get(`autocannon/${side}`) ?? []), ac.reported]);
        return ac.result;
      });
    }
  }
  return (['paced', 'autocannon'] as const).flatMap((method) =>
    (['service', 'direct'] as const).map((side): RateSummary => {
      const s = summarize(m.of(`${method}/${side}`));
      const rep = reported.get(`${method}/${side}`);
      return {
        method,
        side,
        rate: cfg.rate,
        connections: method === 'paced' ? PACED_MAX_IN_FLIGHT : cfg.rateConnections,
        achievedRps: s.rps,
        latency: s.latency,
        ...(method === 'paced'
          ? { sendLatency: latencyFigures(m.of(`paced/${side}`).flatMap((x) => x.r.sendLatencies ?? [])) }
          : {}),
        ...(rep
          ? {
              reported: {
                p50: Math.max(...rep.map((x) => x.p50)),
                p99: Math.max(...rep.map((x) => x.p99)),
                rps: Math.round(rep.reduce((a, x) => a + x.rps, 0) / rep.length),
              },
            }
          : {}),
        requests: s.requests,
        failures: s.failures,
        cpu: s.cpu,
        cpuMsPerRequest: s.cpuMsPerRequest,
        queries: s.queries,
      };
    }),
  );
}
