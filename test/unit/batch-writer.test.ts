import { expect } from 'chai';
import { Registry } from 'prom-client';
import { classifyInsertError, createLogger } from '@telemetry/platform';
import { BatchWriter, type RowSink } from '@telemetry/stream-consumer';
import { LOCAL_LAYOUT, streamTables, type CheckRow, type EventRow } from '@telemetry/store';

const logger = createLogger({ service: 'test', level: 'silent' });

/** Rows with `bad: true` make the whole insert fail as ClickHouse 18.16 answers a parse error. */
class PickySink implements RowSink {
  inserts: number[][] = [];
  attempts = 0;
  transientLeft = 0;
  insert(_table: string, rows: readonly object[]): Promise<void> {
    this.attempts++;
    if (this.transientLeft > 0) {
      this.transientLeft--;
      return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:8123'));
    }
    const bad = (rows as { n: number; bad?: boolean }[]).find((r) => r.bad);
    if (bad) {
      return Promise.reject(
        new Error(`Code: 376, e.displayText() = DB::Exception: Cannot parse uuid row-${bad.n}: (at row 1)`),
      );
    }
    this.inserts.push((rows as { n: number }[]).map((r) => r.n));
    return Promise.resolve();
  }
}

function writerFor(sink: RowSink, rejected: { rows: readonly object[]; reason: string }[], failLeft = 0): BatchWriter {
  let fails = failLeft;
  return new BatchWriter({
    sink,
    logger,
    registry: new Registry(),
    maxRows: 100,
    maxAgeMs: 5,
    retryMaxMs: 5,
    onRejected: (_table, rows, reason) => {
      if (fails-- > 0) return Promise.reject(new Error('Kafka did not acknowledge'));
      rejected.push({ rows, reason });
      return Promise.resolve();
    },
  });
}

describe('batch writer: permanent vs transient insert errors (unit)', () => {
  it('classifies ClickHouse data errors as rejected and everything else as transient', () => {
    expect(classifyInsertError(new Error('Code: 27, e.displayText() = DB::Exception: Cannot parse input'))).to.equal(
      'rejected',
    );
    expect(classifyInsertError(Object.assign(new Error('x'), { code: '376' }))).to.equal('rejected');
    // Too many partitions in one block (current ClickHouse) or too many parts: the batch is split.
    expect(classifyInsertError(new Error('Code: 252, e.displayText() = DB::Exception: Too many parts'))).to.equal(
      'split',
    );
    expect(
      classifyInsertError(
        Object.assign(new Error('Too many partitions for single INSERT block (more than 100)'), { code: '252' }),
      ),
    ).to.equal('split');
    // An unknown field is a migration not yet applied, not bad data: keep retrying.
    expect(classifyInsertError(new Error('Code: 117, e.displayText() = DB::Exception: Unknown field'))).to.equal(
      'transient',
    );
    expect(classifyInsertError(new Error('connect ECONNREFUSED 127.0.0.1:8123'))).to.equal('transient');
  });

  it('bisects a rejected batch: every good row is written once, each bad row is dead-lettered with the reason', async () => {
    const sink = new PickySink();
    const rejected: { rows: readonly object[]; reason: string }[] = [];
    const w = writerFor(sink, rejected);
    const rows = Array.from({ length: 40 }, (_, n) => ({ n, bad: n === 3 || n === 29 }));
    await w.write('events', rows);
    const written = sink.inserts.flat().sort((a, b) => a - b);
    expect(written).to.deep.equal(rows.filter((r) => !r.bad).map((r) => r.n));
    expect(rejected.map((r) => (r.rows as { n: number }[]).map((x) => x.n))).to.deep.equal([[3], [29]]);
    expect(rejected[0]!.reason).to.contain('Cannot parse uuid row-3');
    // Bisection, not one insert per row: far fewer attempts than rows.
    expect(sink.attempts).to.be.lessThan(25);
  });

  it('splits a batch ClickHouse refuses whole for its partitions until each part goes in; nothing is retried as it was', async () => {
    // As current ClickHouse answers an insert block spanning more than 100 partitions
    // (max_partitions_per_insert_block): here, more than 8 distinct months.
    const inserted: number[][] = [];
    let attempts = 0;
    const sink: RowSink = {
      insert: (_t, rows) => {
        attempts++;
        const months = new Set((rows as { month: number }[]).map((r) => r.month));
        if (months.size > 8) {
          const err = Object.assign(new Error(`Too many partitions for single INSERT block (more than 8)`), {
            code: '252',
          });
          return Promise.reject(err);
        }
        inserted.push((rows as { month: number }[]).map((r) => r.month));
        return Promise.resolve();
      },
    };
    const registry = new Registry();
    const rejected: { rows: readonly object[]; reason: string }[] = [];
    const w = new BatchWriter({
      sink,
      logger,
      registry,
      maxRows: 1000,
      maxAgeMs: 5,
      retryMaxMs: 5,
      onRejected: (_t, rows, reason) => {
        rejected.push({ rows, reason });
        return Promise.resolve();
      },
    });
    const rows = Array.from({ length: 300 }, (_, month) => ({ month }));
    await w.write('events', rows);
    expect(
      inserted
        .flat()
        .sort((a, b) => a - b)
        .join(),
    ).to.equal(rows.map((r) => r.month).join());
    expect(rejected).to.deep.equal([]);
    expect(attempts).to.be.lessThan(130); // halving, not one insert per row
    const splits = await registry.getSingleMetric('consumer_insert_splits_total')!.get();
    expect(splits.values.reduce((n, v) => n + v.value, 0)).to.be.greaterThan(0);
  });

  it('retries a single row ClickHouse still refuses whole (too many parts) until the table takes it, never dead-letters it', async () => {
    let refusals = 3;
    const inserted: object[][] = [];
    const sink: RowSink = {
      insert: (_t, rows) => {
        if (refusals-- > 0) {
          return Promise.reject(
            new Error('Code: 252, e.displayText() = DB::Exception: Too many parts (300). Merges are processing'),
          );
        }
        inserted.push([...rows]);
        return Promise.resolve();
      },
    };
    const rejected: { rows: readonly object[]; reason: string }[] = [];
    const w = writerFor(sink, rejected);
    await w.write('events', [{ n: 1 }]);
    expect(inserted).to.deep.equal([[{ n: 1 }]]);
    expect(rejected).to.deep.equal([]);
  });

  it('forgets a room wait that timed out: a stuck table leaves no waiter behind', async () => {
    const sink: RowSink = { insert: () => new Promise<void>(() => undefined) };
    const w = writerFor(sink, []);
    void w.write(
      'stuck',
      Array.from({ length: 100 }, (_, n) => ({ n })),
    );
    for (let i = 0; i < 5; i++) expect(await w.waitForRoom('stuck', 50, 5)).to.equal(false);
    expect((w as unknown as { roomWaiters: unknown[] }).roomWaiters).to.have.length(0);
    w.abort();
  });

  it('retries transient errors without splitting the batch', async () => {
    const sink = new PickySink();
    sink.transientLeft = 3;
    const w = writerFor(sink, []);
    await w.write('checks', [{ n: 1 }, { n: 2 }]);
    expect(sink.inserts).to.deep.equal([[1, 2]]);
    expect(sink.attempts).to.equal(4);
  });

  it('retries the dead-letter hand-off until it succeeds: the write resolves only after it', async () => {
    const sink = new PickySink();
    const rejected: { rows: readonly object[]; reason: string }[] = [];
    const w = writerFor(sink, rejected, 2);
    await w.write('events', [{ n: 1 }, { n: 2, bad: true }]);
    expect(sink.inserts.flat()).to.deep.equal([1]);
    expect(rejected).to.have.length(1);
  });

  it('a write whose rows were neither inserted nor dead-lettered does not resolve: stop() rejects it', async () => {
    const sink = new PickySink();
    const w = writerFor(sink, [], Number.POSITIVE_INFINITY);
    const pending = w.write('events', [{ n: 7, bad: true }]);
    let settled: 'resolved' | 'rejected' | undefined;
    pending.then(
      () => (settled = 'resolved'),
      () => (settled = 'rejected'),
    );
    const deadline = Date.now() + 2000;
    while (sink.attempts === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    expect(settled).to.equal(undefined);
    w.abort();
    await pending.catch(() => undefined);
    expect(settled).to.equal('rejected');
  });

  it('keeps at most `concurrency` inserts of a table in flight, and each write resolves after its own insert', async () => {
    const gates: (() => void)[] = [];
    let inFlight = 0;
    let most = 0;
    const done: number[] = [];
    const sink: RowSink = {
      insert: (_table, rows) => {
        inFlight++;
        most = Math.max(most, inFlight);
        return new Promise<void>((resolve) =>
          gates.push(() => {
            inFlight--;
            done.push((rows[0] as { n: number }).n);
            resolve();
          }),
        );
      },
    };
    const w = new BatchWriter({
      sink,
      logger,
      registry: new Registry(),
      maxRows: 1,
      maxAgeMs: 1000,
      concurrency: 2,
      retryMaxMs: 5,
      onRejected: () => Promise.resolve(),
    });
    const writes = [1, 2, 3, 4].map((n) => w.write('events', [{ n }]));
    const settled: number[] = [];
    writes.forEach((p, i) => void p.then(() => settled.push(i + 1)));
    const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
    await tick();
    expect(inFlight).to.equal(2);
    expect(w.pendingRows).to.equal(4);
    gates.splice(1, 1)[0]!(); // the second insert finishes first
    await tick();
    expect(settled).to.deep.equal([2]);
    expect(inFlight).to.equal(2); // the third took the slot at once
    while (gates.length > 0) {
      gates.shift()!();
      await tick();
    }
    await Promise.all(writes);
    expect(most).to.equal(2);
    expect(done.sort()).to.deep.equal([1, 2, 3, 4]);
    expect(w.pendingRows).to.equal(0);
  });
});

describe('batch writer tables (types)', () => {
  it('takes for each stream table only rows of its type (a wrong table does not compile)', async () => {
    const sink = new PickySink();
    const w = writerFor(sink, []);
    const t = streamTables('db', LOCAL_LAYOUT);
    const events: EventRow[] = [];
    const checks: CheckRow[] = [];
    // Compile-time checks: `npm run check` (tsc) fails if either line compiles.
    // @ts-expect-error check rows are not rows of the events table
    const wrongEvents = () => w.write(t.events, checks);
    // @ts-expect-error event rows are not rows of the checks table
    const wrongChecks = () => w.write(t.checks, events);
    expect([typeof wrongEvents, typeof wrongChecks]).to.deep.equal(['function', 'function']);
    await w.write(t.events, events);
    await w.write(t.checks, checks);
    await w.stop();
    expect(sink.attempts).to.equal(0); // nothing to insert
  });
});
