/**
 * The prose of the bench:query section that depends on the run: what data was loaded and
 * how, how each path was measured, and the notes (fixed-rate methods, the hot tail, the
 * machine, what the service costs per first page against ClickHouse's own time).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { QueryConfig } from '@telemetry/query-service';
import { ROOT } from '../../harness/processes.js';
import { ms } from '../../harness/report.js';
import type { DataSpec, LoadFigures } from './data.js';
import type { Fixtures } from './fixtures.js';
import { cfg, SERVICE_MAX_RESULT_ROWS } from './options.js';
import type { ScenarioSummary } from './report.js';
import type { DirectTarget } from './requests.js';

const f2 = (x: number | undefined): string => (x === undefined ? 'n/a' : x.toFixed(2));

export function describe(o: {
  database: string;
  spec: DataSpec;
  load: LoadFigures;
  fx: Fixtures;
  directTarget: DirectTarget;
  queryConfig: QueryConfig;
  summaries: ScenarioSummary[];
}) {
  const { database, spec, load, fx, directTarget, queryConfig, summaries } = o;
  let clientVersion = '';
  try {
    clientVersion = (
      JSON.parse(readFileSync(join(ROOT, 'node_modules/@clickhouse/client/package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
  } catch {
    // unknown
  }
  const data = {
    'Rows loaded': `${load.rows.toLocaleString('en-US')} checks in \`${database}.checks\`: ${spec.monitors.toLocaleString('en-US')} monitors x ${spec.minutes.toLocaleString('en-US')} checks (one a minute, ${(spec.minutes / 60).toFixed(1)} h), ~3% down, ~5% degraded`,
    Load: `INSERT ... SELECT FROM numbers() in chunks of 1M rows: ${load.insertSeconds} s (${load.rowsPerSecond.toLocaleString('en-US')} rows/s, materialized view included: ${load.rollupRows.toLocaleString('en-US')} rows in checks_hourly); then OPTIMIZE ... FINAL of both tables: ${load.optimizeSeconds} s (${load.checksParts} part(s), ${(load.diskBytes / 2 ** 20).toFixed(0)} MiB on disk)`,
  };
  const method = [
    `The **service** is \`services/query-service/dist/main.js\` (compiled, plain node) in its own process (LOG_LEVEL=warn), reading with its read-only ClickHouse user (\`<database>_query\`, tools/devstack/users.ts) and an API key (checks:read). **ClickHouse direct** is the same SQL (\`checksSql\`, \`summarySql\`, \`incidentSpansSql\` of @telemetry/store) POSTed by the benchmark to ClickHouse's HTTP interface the way the service's client sends it: same user, database, settings (max_execution_time=${directTarget.settings.max_execution_time}, max_result_rows=${SERVICE_MAX_RESULT_ROWS}), FORMAT JSONEachRow (JSON for the summary's quantiles, as the service), keep-alive; a summary sends its three queries (counts, quantiles, the incidents behind its SLA figures) in parallel, as the service does.`,
    '',
    `Closed loop: ${cfg.connections} concurrent requests (one keep-alive connection each), ${cfg.rounds} rounds of ${cfg.seconds} s per scenario and path, service and direct alternating (service, direct, service, direct), after a ${cfg.warmup} s warm-up of each. Each request draws a random monitor (first page) or a random fixture of ${fx.deep.length} monitors (others). req/s counts answers with status 200 and the expected number of rows; percentiles pool every request of all rounds; CPU is % of one core (bench = the load generator); "ClickHouse queries running" samples \`system.processes\` every 100 ms. Then the same with one request at a time (${cfg.serialSeconds} s per scenario, path and round): the cost of each path per request without queueing.`,
  ];
  const notes = [
    `Fixed rate: "paced" sends ${cfg.rate} req/s evenly spaced whatever the answers do and measures from each request's scheduled send time, so a stall also counts against the requests queued behind it; the target is judged on it. autocannon's \`overallRate\` lets each of its ${cfg.rateConnections} connections send ${Math.round(cfg.rate / cfg.rateConnections)} requests back to back at the start of every second (lib/httpClient.js, \`reqsMadeThisSecond\`), so it offers bursts; its reported percentiles (whole ms) add synthetic samples with an expected interval of \`Math.ceil(1 / rate)\` = 1 ms (lib/run.js), which inflates them. Both are shown.`,
    `The service runs with its hot tail (TAIL_CHECKS_PER_MONITOR=${queryConfig.tailChecksPerMonitor}, TAIL_MAX_MONITORS=${queryConfig.tailMaxMonitors}) reading its own empty check-results topic: every monitor's tail loads from ClickHouse on its first first-page request. Before the measured runs the benchmark asks each monitor's first page once (16 at a time), as dashboards would, and reports the heap the tail then holds (nodejs_heap_size_used_bytes before and after, garbage included). Deep pages, the filtered range and summaries still go to ClickHouse; the direct side is ClickHouse as before.`,
    'The machine has 2 cores shared by the load generator, the service, ClickHouse and the idle Kafka: the service competes with ClickHouse for CPU, which direct queries do not; the ratios are the figures that carry over best.',
    'The service runs compiled (`npm run build` = `tsc -b`, which the command runs first) under plain node, as production does.',
    "CPU ms per request divide each process's CPU over a run by the requests answered: background work (the 100 ms sampling of `system.processes`, key reloads, pings) is included, which weighs more at low request rates.",
  ];
  const fp = summaries.find((x) => x.key === 'first_page');
  if (fp) {
    const c = fp.service.cpuMsPerRequest;
    notes.push(
      `What the service costs (first page): one request at a time it adds ${ms(fp.serial.service.latency.p50 - fp.serial.direct.latency.p50)} ms to ClickHouse's p50 of ${ms(fp.serial.direct.latency.p50)} ms; under load its process uses ${f2(c.service)} ms CPU per request (${f2(c.service_sys)} ms of it in the kernel) next to ClickHouse's ${f2(fp.direct.cpuMsPerRequest.clickhouse)} ms per query, so on 2 shared cores the service path can reach about ${fp.cpuBoundRatio.toFixed(2)}x the direct throughput. Per query, @clickhouse/client ${clientVersion} first awaits \`sleep(0)\` (a timer of at least 1 ms, dist/connection/socket_pool.js), then sends the SQL through a stream pipeline with its own AbortController (a DOMException per query); it opens at most 10 sockets (\`max_open_connections\`, not set in services/query-service/src/service.ts), so a replica never has more than 10 queries (5 summaries) in flight.`,
    );
  }
  return { data, method, notes };
}
