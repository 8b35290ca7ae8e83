import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createValidators } from '@telemetry/contract';
import { createLogger } from '@telemetry/platform';
import { clientTimeZone, decodeCheck, decodeEvent, eventTime, needsFirstSeen } from '@telemetry/store';
import { BatchWriter, type RowSink } from '@telemetry/stream-consumer';

const logger = createLogger({ service: 'test', level: 'silent' });

class FakeSink implements RowSink {
  inserts: { table: string; rows: readonly object[] }[] = [];
  failuresLeft = 0;
  insert(table: string, rows: readonly object[]): Promise<void> {
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      return Promise.reject(new Error('ClickHouse is down'));
    }
    this.inserts.push({ table, rows });
    return Promise.resolve();
  }
}

function writer(sink: RowSink, maxRows: number, maxAgeMs: number): BatchWriter {
  const onRejected = (): Promise<void> => Promise.reject(new Error('no row is rejected in these tests'));
  return new BatchWriter({ sink, logger, registry: new Registry(), maxRows, maxAgeMs, retryMaxMs: 20, onRejected });
}

describe('stream consumer (unit)', () => {
  it('corrects event time for client clock skew and keeps out-of-range times out', () => {
    expect(eventTime(1000, null, null)).to.equal(1000);
    expect(eventTime(1000, 5000, 5010)).to.equal(990); // client 4010 s ahead; event 10 s before send
    expect(eventTime(1000, 900, null)).to.equal(900);
    expect(eventTime(1000, 10, 5_000_000_000)).to.equal(1000); // would be negative
  });

  it('keys an event by its own time only inside the window around its receive time (CLIENT_TIME_WINDOW)', () => {
    const v = createValidators();
    const received = Date.UTC(2026, 10, 22, 10);
    const day = 86_400_000;
    const row = (clientTs: number, id = 'order-1') => {
      const d = decodeEvent(
        v,
        Buffer.from(
          JSON.stringify({
            v: 1,
            event_id: '6f1b5a8e-0000-4000-8000-000000000001',
            key_id: 'k',
            source: 's',
            category: 'c',
            payload: {},
            client_event_id: id,
            client_ts: new Date(clientTs).toISOString(),
            received_at: new Date(received).toISOString(),
          }),
        ),
      );
      if (!d.ok) throw new Error(d.reason);
      return d.row;
    };
    const s = (ms: number): number => Math.floor(ms / 1000);
    // Inside: the client's time keys the event; no first-seen look-up.
    const inside = row(received - 3 * day);
    expect(inside.id_time).to.equal(s(received - 3 * day));
    expect(inside.event_time).to.equal(s(received - 3 * day));
    expect(needsFirstSeen(inside)).to.equal(false);
    // Outside (25 years back, or a week ahead): the receive time, through first-seen; the client's time kept.
    for (const far of [Date.UTC(2001, 0, 1), received + 7 * day]) {
      const out = row(far);
      expect(out.id_time).to.equal(s(received));
      expect(out.event_time).to.equal(s(far)); // not a key: the client's time, as before
      expect(out.client_ts).to.equal(s(far));
      expect(needsFirstSeen(out)).to.equal(true);
    }
    // Near either edge: the client's time, recorded through first-seen for later copies.
    for (const edge of [received - 29.5 * day, received + 1.5 * day]) {
      const e = row(edge);
      expect(e.id_time).to.equal(s(edge));
      expect(needsFirstSeen(e)).to.equal(true);
    }
    expect(clientTimeZone(received + 2 * day + 1000, received)).to.equal('outside');
    expect(clientTimeZone(received - 30 * day - 1000, received)).to.equal('outside');
    expect(clientTimeZone(received + 60_000, received)).to.equal('inside'); // a clock a minute fast
  });

  it('decodes valid messages and explains invalid ones', () => {
    const v = createValidators();
    const ev = decodeEvent(
      v,
      Buffer.from(
        JSON.stringify({
          v: 1,
          event_id: '6f1b5a8e-0000-4000-8000-000000000001',
          key_id: 'k',
          source: 's',
          category: 'c',
          payload: { a: 1 },
          received_at: '2026-11-22T10:00:00.123Z',
        }),
      ),
    );
    expect(ev.ok && ev.row.payload).to.equal('{"a":1}');
    expect(ev.ok && ev.row.received_at).to.equal(Date.UTC(2026, 10, 22, 10) / 1000);
    const notJson = decodeEvent(v, Buffer.from('{nope'));
    expect(notJson.ok === false && notJson.reason).to.match(/^not JSON/);
    const wrongType = decodeCheck(
      v,
      Buffer.from(
        JSON.stringify({
          id: 'a',
          monitor_id: 'm',
          status: 'up',
          response_time: 'fast',
          status_code: 200,
          created_at: '2026-11-22T10:00:00Z',
        }),
      ),
    );
    expect(wrongType.ok).to.equal(false);
    expect(decodeCheck(v, null).ok).to.equal(false);
  });

  it('flushes on size, in batches no larger than maxRows, and resolves writes only after the insert', async () => {
    const sink = new FakeSink();
    const w = writer(sink, 3, 60_000);
    const p = w.write('t', [{ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }, { a: 5 }, { a: 6 }, { a: 7 }]);
    await p;
    expect(sink.inserts.map((i) => i.rows.length)).to.deep.equal([3, 3, 1]);
    await w.stop();
  });

  it('flushes on age, gathering writes of several callers into one insert', async () => {
    const sink = new FakeSink();
    const w = writer(sink, 1000, 30);
    let done = false;
    const a = w.write('t', [{ a: 1 }]).then(() => (done = true));
    const b = w.write('t', [{ a: 2 }]);
    expect(done).to.equal(false);
    await Promise.all([a, b]);
    expect(sink.inserts).to.have.length(1);
    expect(sink.inserts[0]!.rows).to.have.length(2);
    await w.stop();
  });

  it('retries transient insert failures and resolves once the rows are in', async () => {
    const sink = new FakeSink();
    sink.failuresLeft = 3;
    const w = writer(sink, 10, 1);
    await w.write('t', [{ a: 1 }]);
    expect(sink.inserts).to.have.length(1);
    await w.stop();
  });

  it('empties itself on stop and refuses writes afterwards', async () => {
    const sink = new FakeSink();
    const w = writer(sink, 1000, 60_000);
    const p = w.write('t', [{ a: 1 }]);
    await w.stop();
    await p;
    expect(sink.inserts).to.have.length(1);
    let refused = false;
    await w.write('t', [{ a: 2 }]).catch(() => (refused = true));
    expect(refused).to.equal(true);
  });
});

describe('batch writer back-pressure (unit)', () => {
  it('counts rows until they are inserted, and lets waiters through once there is room', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const sink: RowSink = { insert: () => gate };
    const w = writer(sink, 2, 60_000);
    const first = w.write('t', [{ a: 1 }, { a: 2 }]); // full batch: flushes, insert blocked
    expect(w.pendingRows).to.equal(2);
    let through = false;
    const waiting = w.waitForRoom('t', 2).then(() => (through = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(through).to.equal(false);
    release();
    await first;
    await waiting;
    expect(through).to.equal(true);
    expect(w.pendingRows).to.equal(0);
    await w.stop();
  });

  it('gives each table its own room: a table whose inserts hang never holds another', async () => {
    const sink: RowSink = {
      insert: (table) => (table === 'stuck' ? new Promise<void>(() => undefined) : Promise.resolve()),
    };
    const w = writer(sink, 2, 60_000);
    void w.write('stuck', [{ a: 1 }, { a: 2 }]);
    expect(w.pendingRowsOf('stuck')).to.equal(2);
    // The stuck table has no room (a bounded wait says so)...
    expect(await w.waitForRoom('stuck', 2, 30)).to.equal(false);
    // ...and the other table still has all of its own.
    expect(await w.waitForRoom('free', 2, 30)).to.equal(true);
    await w.write('free', [{ a: 3 }, { a: 4 }]);
    expect(w.pendingRowsOf('free')).to.equal(0);
    w.abort();
  });
});
