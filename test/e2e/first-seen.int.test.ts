import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { DEFAULT_TENANT } from '@telemetry/contract';
import { sqlIdentifier, type ClickHouseClient } from '@telemetry/platform';
import { EMPTY_ENRICHMENT, FirstSeen, LOOKUP_SLICE, rowTime, type EventRow } from '@telemetry/store';
import { adminClickHouse, testStack } from '../support/fixtures.js';

/**
 * The consumer's first-seen look-up on real ClickHouse with the batch of a consumer
 * catching up: more ids than one query of max_query_size (256 KiB) can name. Found by
 * `npm run test:cluster`, where a fresh consumer group stalled on its first batch.
 */
describe('first-seen times for a large batch (real ClickHouse)', function () {
  this.timeout(60_000);
  let ch: ClickHouseClient;

  before(() => {
    ch = adminClickHouse();
  });

  after(async () => {
    await ch?.close();
  });

  it('resolves 20,000 new event ids in one batch, and finds them again from the table', async () => {
    const table = `${sqlIdentifier(testStack().database)}.event_first_seen`;
    const now = Date.now();
    const rows: EventRow[] = Array.from({ length: 20_000 }, (_, i) => ({
      tenant_id: DEFAULT_TENANT,
      event_id: randomUUID(),
      key_id: 'k',
      source: 's',
      category: 'c',
      payload: '{}',
      client_event_id: `order-${i}`,
      // As decodeEvent leaves it: what the first copy records (its receive time).
      id_time: rowTime(now - i * 1000, false),
      event_time: rowTime(now, false),
      client_ts: null,
      sent_at: null,
      received_at: rowTime(now - i * 1000, false),
      inserted_at: Math.floor(now / 1000),
      protocol: 'telemetry',
      anonymous_id: '',
      user_id: '',
      client_ip: '',
      user_agent: '',
      ...EMPTY_ENRICHMENT,
    }));
    expect(rows.length).to.be.greaterThan(5 * LOOKUP_SLICE);
    await new FirstSeen(ch, table, false).resolve(rows);
    expect(rows.every((r, i) => r.id_time === rowTime(now - i * 1000, false))).to.equal(true);
    // A consumer without them in memory (a restart) reads the recorded times back.
    const later = rows.map((r) => ({
      ...r,
      received_at: rowTime(now + 60_000, false),
      id_time: rowTime(now + 60_000, false),
    }));
    await new FirstSeen(ch, table, false).resolve(later);
    expect(later.every((r, i) => r.id_time === rowTime(now - i * 1000, false))).to.equal(true);
  });
});
