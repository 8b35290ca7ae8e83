import { expect } from 'chai';
import { Snapshot, type SnapshotOptions } from '@telemetry/platform';
import { FakeClock, settle, silentLogger } from './support/fakes.js';

/** A source whose loads the test answers one by one. */
class Source {
  readonly calls: { resolve(v: number): void; reject(err: Error): void }[] = [];
  load = (): Promise<number> => new Promise((resolve, reject) => this.calls.push({ resolve, reject }));
  /** Answers the oldest open load. */
  answer(v: number | Error): void {
    const c = this.calls.shift();
    if (!c) throw new Error('no load in progress');
    if (v instanceof Error) c.reject(v);
    else c.resolve(v);
  }
}

function snapshot(source: Source, clock: FakeClock, over: Partial<SnapshotOptions<number>> = {}): Snapshot<number> {
  return new Snapshot<number>({
    name: 'numbers',
    load: source.load,
    intervalMs: 1000,
    logger: silentLogger,
    failureMessage: 'numbers not reloaded',
    clock,
    ...over,
  });
}

describe('reloaded snapshot (unit)', () => {
  it('loads on start and is healthy once loaded', async () => {
    const source = new Source();
    const clock = new FakeClock();
    const s = snapshot(source, clock);
    expect(s.health()).to.equal(false);
    const started = s.start();
    source.answer(1);
    await started;
    expect(s.value()).to.equal(1);
    expect(s.health()).to.equal(true);
    await s.stop();
  });

  it('reloads every interval, one load at a time, and keeps the last good copy while the source fails', async () => {
    const source = new Source();
    const clock = new FakeClock();
    const s = snapshot(source, clock);
    const started = s.start();
    source.answer(1);
    await started;
    await clock.advance(999);
    expect(source.calls, 'not before the interval').to.have.length(0);
    await clock.advance(1);
    expect(source.calls).to.have.length(1);
    await clock.advance(5000);
    expect(source.calls, 'no second load while one runs').to.have.length(1);
    source.answer(new Error('ClickHouse is down'));
    await settle();
    expect(s.value(), 'last good copy').to.equal(1);
    expect(s.health(), 'loaded once is enough').to.equal(true);
    await clock.advance(1000);
    source.answer(2);
    await settle();
    expect(s.value()).to.equal(2);
    await s.stop();
  });

  it('stop clears the timer: nothing is loaded afterwards', async () => {
    const source = new Source();
    const clock = new FakeClock();
    const s = snapshot(source, clock);
    const started = s.start();
    source.answer(1);
    await started;
    expect(clock.pending).to.equal(1);
    await s.stop();
    expect(clock.pending).to.equal(0);
    await clock.advance(10_000);
    expect(source.calls).to.have.length(0);
  });

  it('fails to start when the first load fails, unless told to start empty and keep trying', async () => {
    const source = new Source();
    const clock = new FakeClock();
    const strict = snapshot(source, clock);
    const a = strict.start();
    source.answer(new Error('down'));
    let failed = false;
    await a.catch(() => (failed = true));
    expect(failed).to.equal(true);
    expect(clock.pending, 'no timer when start failed').to.equal(0);

    const lenient = snapshot(source, clock, { requireFirstLoad: false });
    const b = lenient.start();
    source.answer(new Error('down'));
    await b;
    expect(lenient.value()).to.equal(undefined);
    expect(lenient.health()).to.equal(false);
    await clock.advance(1000);
    source.answer(7);
    await settle();
    expect(lenient.value()).to.equal(7);
    expect(lenient.health()).to.equal(true);
    await lenient.stop();
  });

  it('refresh() loads at once, rejects on failure, and a load that ends after a newer one is dropped', async () => {
    const source = new Source();
    const clock = new FakeClock();
    const s = snapshot(source, clock);
    const started = s.start();
    source.answer(1);
    await started;
    const older = s.refresh();
    const newer = s.refresh();
    expect(source.calls).to.have.length(2);
    source.calls[1]!.resolve(3);
    await newer;
    source.calls[0]!.resolve(2);
    source.calls.splice(0, 2);
    await older;
    expect(s.value(), 'the older answer does not replace the newer').to.equal(3);
    const failing = s.refresh();
    source.answer(new Error('down'));
    let failed = false;
    await failing.catch(() => (failed = true));
    expect(failed).to.equal(true);
    expect(s.value()).to.equal(3);
    await s.stop();
  });

  it('goes unhealthy when the copy is older than staleAfterMs, and tells onLoad what it replaced', async () => {
    const source = new Source();
    const clock = new FakeClock();
    const loads: [number, number | undefined][] = [];
    const s = snapshot(source, clock, { staleAfterMs: 2500, onLoad: (next, prev) => loads.push([next, prev]) });
    const started = s.start();
    source.answer(1);
    await started;
    await clock.advance(1000);
    source.answer(new Error('down'));
    await clock.advance(1000);
    source.answer(new Error('down'));
    await settle();
    expect(s.health(), '2 s old').to.equal(true);
    await clock.advance(600);
    expect(s.health(), '2.6 s old').to.equal(false);
    await clock.advance(400);
    source.answer(2);
    await settle();
    expect(s.health()).to.equal(true);
    expect(loads).to.deep.equal([
      [1, undefined],
      [2, 1],
    ]);
    await s.stop();
  });
});
