/**
 * Freshness of `npm run bench:consume`: events sent through the real gateway at a steady
 * rate; for each event, the time its request's 200 arrived and the time a poll of
 * ClickHouse first returned its client id. freshness = first seen - acknowledged.
 *
 * A poll's rows were visible when the poll was sent at the latest (ClickHouse reads the
 * parts that exist when the query starts), and were not visible when the previous poll was
 * sent: "first seen" is the send time of the first poll that returned the row, which
 * overstates the true freshness by less than one poll interval.
 */
import { sqlIdentifier, sqlNumber, sqlString, type ClickHouseClient } from '@telemetry/platform';
import { openLoop } from '../../harness/load.js';
import { sleep } from '../../harness/processes.js';
import { quantiles, type Quantiles } from '../../harness/report.js';
import { benchRequest, clientId } from './backlog.js';

export interface FreshnessOptions {
  gatewayUrl: string;
  accessKey: string;
  ch: ClickHouseClient;
  database: string;
  /** A source no other event has: the polls read only these rows. */
  source: string;
  idPrefix: string;
  ratePerSecond: number;
  eventsPerRequest: number;
  seconds: number;
  pollMs: number;
  /** Requests waiting for their answer; above it a scheduled request is skipped (counted). */
  maxInFlight: number;
  /** How long to wait for the last events to appear after the load stopped. */
  settleMs: number;
}

export interface FreshnessResult {
  offeredEventsPerSecond: number;
  achievedEventsPerSecond: number;
  eventsPerRequest: number;
  loadSeconds: number;
  requests: number;
  failedRequests: number;
  skippedRequests: number;
  ackedEvents: number;
  seenEvents: number;
  /** Acknowledged events not visible within settleMs after the load. */
  missingEvents: number;
  /** Found only by the final full read, not by a windowed poll (their "seen" is late). */
  lateFound: number;
  /** first seen - 200 received, ms. */
  freshnessMs: Quantiles;
  /** request sent - 200 received, ms. */
  ackMs: Quantiles;
  polls: number;
  pollIntervalMs: number;
  /** Time between the sends of consecutive polls: the bound on the error of "first seen". */
  pollGapMs: Quantiles;
  pollQueryMs: Quantiles;
  failures: Record<string, number>;
  /**
   * Whether the gateway kept up: every request answered 200, none skipped, and 99% of the
   * answers within 1 s. Otherwise a 200 arrives long after Kafka took the event, and
   * "first seen - 200" understates freshness (it can even be negative): not a figure.
   */
  gatewayKeptUp: boolean;
  /** Why not, when it did not. */
  overload: string;
}

/** The answer time the freshness figures can bear: a 200 later than this says little about the event. */
export const MAX_ACK_P99_MS = 1000;

export async function measureFreshness(o: FreshnessOptions): Promise<FreshnessResult> {
  const requestsPerSecond = o.ratePerSecond / o.eventsPerRequest;
  const totalRequests = Math.max(1, Math.round(requestsPerSecond * o.seconds));
  const totalEvents = totalRequests * o.eventsPerRequest;
  const intervalMs = 1000 / requestsPerSecond;
  const acked = new Float64Array(totalEvents).fill(NaN);
  /** Wall-clock ms at which each event's request was sent: its received_at is not earlier. */
  const sentWall = new Float64Array(totalEvents).fill(NaN);
  const seen = new Float64Array(totalEvents).fill(NaN);
  /** 1: will never count (request failed or skipped); the low-water mark passes it. */
  const ignored = new Uint8Array(totalEvents);
  const ackLatencies: number[] = [];
  const failures: Record<string, number> = {};
  let failedRequests = 0;
  let skippedRequests = 0;
  let sent = 0; // events scheduled so far
  let loadDone = false;

  const db = sqlIdentifier(o.database);
  const url = `${o.gatewayUrl}/api/telemetry/events`;
  const headers = { 'Content-Type': 'application/json', 'X-Access-Key': o.accessKey };

  const fail = (first: number, reason: string): void => {
    failures[reason] = (failures[reason] ?? 0) + 1;
    ignored.fill(1, first, first + o.eventsPerRequest);
  };

  const launch = async (k: number): Promise<void> => {
    const first = k * o.eventsPerRequest;
    sent = first + o.eventsPerRequest;
    const body = JSON.stringify(benchRequest(first, o.eventsPerRequest, o.idPrefix, o.source));
    sentWall.fill(Date.now(), first, first + o.eventsPerRequest);
    const t = performance.now();
    try {
      const r = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
      const text = await r.text();
      const at = performance.now();
      if (r.status === 200 && text.includes('"success":true')) {
        acked.fill(at, first, first + o.eventsPerRequest);
        ackLatencies.push(at - t);
      } else {
        failedRequests++;
        fail(first, `HTTP ${r.status} ${text.slice(0, 120)}`);
      }
    } catch (err) {
      failedRequests++;
      fail(first, String(err).slice(0, 120));
    }
  };

  // Open loop: request k is sent at start + k * interval whatever the answers before it.
  const sender = async (): Promise<number> => {
    const seconds = await openLoop({
      total: totalRequests,
      intervalMs,
      maxInFlight: o.maxInFlight,
      send: launch,
      drop: (k) => {
        sent = (k + 1) * o.eventsPerRequest;
        skippedRequests++;
        fail(k * o.eventsPerRequest, 'skipped: too many requests in flight');
      },
    });
    loadDone = true;
    return seconds;
  };

  let lowWater = 0;
  let polls = 0;
  const pollGaps: number[] = [];
  const pollDurations: number[] = [];
  let lastPollStart = NaN;

  const advanceLowWater = (): void => {
    while (lowWater < sent && (ignored[lowWater] === 1 || !Number.isNaN(seen[lowWater]!))) lowWater++;
  };
  const allAckedSeen = (): boolean => {
    for (let i = lowWater; i < totalEvents; i++) {
      if (!Number.isNaN(acked[i]!) && Number.isNaN(seen[i]!)) return false;
    }
    return true;
  };

  // Each poll returns the visible events from the oldest unseen one on: ids sort as their
  // sequence numbers, and received_at (the gateway's clock, which is ours) is not before
  // the second its request was sent, which keeps the read to the sort key's recent end.
  // (inserted_at cannot bound it: on 18.16 the consumer's rows get 1970 there.)
  const read = async (windowed: boolean): Promise<number[]> => {
    const where = [`source = ${sqlString(o.source)}`];
    if (windowed) {
      where.push(`client_event_id >= ${sqlString(clientId(o.idPrefix, lowWater))}`);
      const sentAt = lowWater < sent ? sentWall[lowWater]! : NaN;
      if (!Number.isNaN(sentAt)) where.push(`received_at >= toDateTime(${sqlNumber(Math.floor(sentAt / 1000) - 1)})`);
    }
    const rs = await o.ch.query({
      query: `SELECT toUInt32(substring(client_event_id, ${sqlNumber(o.idPrefix.length + 1)}, 9))
        FROM ${db}.events WHERE ${where.join(' AND ')}`,
      format: 'TabSeparated',
    });
    const text = await rs.text();
    const out: number[] = [];
    for (const line of text.split('\n')) if (line !== '') out.push(Number(line));
    return out;
  };

  const poller = async (): Promise<void> => {
    let settleDeadline = Number.POSITIVE_INFINITY;
    for (;;) {
      const t = performance.now();
      if (!Number.isNaN(lastPollStart)) pollGaps.push(t - lastPollStart);
      lastPollStart = t;
      const rows = await read(true);
      pollDurations.push(performance.now() - t);
      polls++;
      for (const seq of rows) if (seq < totalEvents && Number.isNaN(seen[seq]!)) seen[seq] = t;
      advanceLowWater();
      if (loadDone) {
        if (settleDeadline === Number.POSITIVE_INFINITY) settleDeadline = performance.now() + o.settleMs;
        if (allAckedSeen() || performance.now() > settleDeadline) return;
      }
      const wait = o.pollMs - (performance.now() - t);
      if (wait > 0) await sleep(wait);
    }
  };

  const pollerDone = poller();
  const loadSeconds = await sender();
  await pollerDone;

  // A last full read: rows a windowed poll could have missed (none expected).
  let lateFound = 0;
  const sweepAt = performance.now();
  for (const seq of await read(false)) {
    if (seq < totalEvents && Number.isNaN(seen[seq]!)) {
      seen[seq] = sweepAt;
      if (!Number.isNaN(acked[seq]!)) lateFound++;
    }
  }

  const fresh: number[] = [];
  let ackedEvents = 0;
  let missing = 0;
  for (let i = 0; i < totalEvents; i++) {
    if (Number.isNaN(acked[i]!)) continue;
    ackedEvents++;
    if (Number.isNaN(seen[i]!)) missing++;
    else fresh.push(seen[i]! - acked[i]!);
  }
  const ackMs = quantiles(ackLatencies);
  const overload = [
    failedRequests > 0 ? `${failedRequests} requests failed` : '',
    skippedRequests > 0 ? `${skippedRequests} skipped (${o.maxInFlight} already in flight)` : '',
    ackMs.p99 > MAX_ACK_P99_MS ? `gateway 200 p99 ${Math.round(ackMs.p99)} ms` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return {
    gatewayKeptUp: overload === '',
    overload,
    offeredEventsPerSecond: o.ratePerSecond,
    achievedEventsPerSecond: ackedEvents / loadSeconds,
    eventsPerRequest: o.eventsPerRequest,
    loadSeconds,
    requests: totalRequests,
    failedRequests,
    skippedRequests,
    ackedEvents,
    seenEvents: fresh.length,
    missingEvents: missing,
    lateFound,
    freshnessMs: quantiles(fresh),
    ackMs,
    polls,
    pollIntervalMs: o.pollMs,
    pollGapMs: quantiles(pollGaps),
    pollQueryMs: quantiles(pollDurations),
    failures,
  };
}
