import { expect } from 'chai';
import { ChangeFeed, Mirror, type ChangeLog, type FeedChange } from '@telemetry/platform';
import { silentLogger } from './support/fakes.js';

/** A change log of our own interface, in memory: entries, pruning, notices. */
class MemoryLog implements ChangeLog {
  entries: FeedChange[] = [];
  afterCalls = 0;
  wake: (() => void) | undefined;
  failing = false;

  add(entity: string, id: string): number {
    const seq = (this.entries.at(-1)?.seq ?? 0) + 1;
    this.entries.push({ seq, entity, id });
    return seq;
  }

  head(): Promise<{ newest: number; oldest: number }> {
    if (this.failing) return Promise.reject(new Error('away'));
    return Promise.resolve({ newest: this.entries.at(-1)?.seq ?? 0, oldest: this.entries[0]?.seq ?? 0 });
  }

  after(seq: number, limit: number): Promise<FeedChange[]> {
    this.afterCalls++;
    if (this.failing) return Promise.reject(new Error('away'));
    return Promise.resolve(this.entries.filter((e) => e.seq > seq).slice(0, limit));
  }

  listen(wake: () => void): Promise<{ close(): Promise<void> }> {
    this.wake = wake;
    return Promise.resolve({ close: () => Promise.resolve() });
  }
}

/** The rows a Mirror copies: a fake of our own loader. */
class Rows {
  rows = new Map<string, string>();
  loads: (readonly string[] | undefined)[] = [];
  load = (ids?: readonly string[]): Promise<{ id: string; v: string }[]> => {
    this.loads.push(ids);
    const all = [...this.rows].map(([id, v]) => ({ id, v }));
    return Promise.resolve(ids === undefined ? all : all.filter((r) => ids.includes(r.id)));
  };
}

function setUp(): { log: MemoryLog; rows: Rows; mirror: Mirror<{ id: string; v: string }>; feed: ChangeFeed } {
  const log = new MemoryLog();
  const rows = new Rows();
  const mirror = new Mirror('keys', rows.load, (r) => r.id);
  const feed = new ChangeFeed({ name: 'test', log, catchUpMs: 3_600_000, logger: silentLogger });
  feed.subscribe(mirror);
  return { log, rows, mirror, feed };
}

describe('registry change feed (unit)', () => {
  it('loads everything at start, then reads only the rows the log names, and forgets deleted ones', async () => {
    const { log, rows, mirror, feed } = setUp();
    rows.rows.set('a', '1').set('b', '1');
    log.add('keys', 'a');
    await feed.start();
    expect([mirror.get('a')?.v, mirror.get('b')?.v]).to.deep.equal(['1', '1']);
    expect(feed.sequence).to.equal(1);

    rows.rows.set('a', '2').delete('b');
    rows.rows.set('c', '9'); // changed without a log entry: not read
    log.add('keys', 'a');
    log.add('keys', 'b');
    log.add('other', 'a'); // another entity's change: not this mirror's
    await feed.catchUp();
    expect([mirror.get('a')?.v, mirror.get('b'), mirror.get('c')]).to.deep.equal(['2', undefined, undefined]);
    expect(rows.loads.at(-1)).to.deep.equal(['a', 'b']);
    expect(feed.sequence).to.equal(4);
    await feed.stop();
  });

  it('reads the log when notified, coalescing notices that arrive while it reads', async () => {
    const { log, rows, mirror, feed } = setUp();
    await feed.start();
    const calls = log.afterCalls;
    rows.rows.set('k', 'x');
    log.add('keys', 'k');
    for (let i = 0; i < 10; i++) log.wake!();
    await feed.waitFor(1, 1000);
    expect(mirror.get('k')?.v).to.equal('x');
    // One read found the change; at most one more ran for the notices that came meanwhile.
    await feed.catchUp();
    expect(log.afterCalls - calls).to.be.at.most(4);
    await feed.stop();
  });

  it('loads everything again when the log was pruned past its copy', async () => {
    const { log, rows, mirror, feed } = setUp();
    rows.rows.set('a', '1');
    await feed.start();
    rows.rows.set('a', '2').set('z', '1');
    log.add('keys', 'a');
    log.add('keys', 'z');
    log.entries.shift(); // pruned: entry 1 is gone, the copy is at 0
    await feed.catchUp();
    expect([mirror.get('a')?.v, mirror.get('z')?.v]).to.deep.equal(['2', '1']);
    expect(rows.loads.at(-1)).to.equal(undefined);
    expect(feed.sequence).to.equal(2);
    await feed.stop();
  });

  it('keeps its copies while the log is away, turns unhealthy after three missed catch-ups, and catches up after', async () => {
    let now = 0;
    const log = new MemoryLog();
    const rows = new Rows();
    const mirror = new Mirror('keys', rows.load, (r: { id: string; v: string }) => r.id);
    const clock = {
      now: () => now,
      setTimeout: () => ({}),
      clearTimeout: () => {},
    };
    const feed = new ChangeFeed({ name: 'test', log, catchUpMs: 1000, logger: silentLogger, clock });
    feed.subscribe(mirror);
    rows.rows.set('a', '1');
    await feed.start();
    expect(feed.health()).to.equal(true);
    log.failing = true;
    rows.rows.set('a', '2');
    log.entries.push({ seq: 1, entity: 'keys', id: 'a' });
    await feed.catchUp().catch(() => undefined);
    expect(mirror.get('a')?.v, 'the last copy stays').to.equal('1');
    now += 13_001;
    expect(feed.health()).to.equal(false);
    log.failing = false;
    await feed.catchUp();
    expect([mirror.get('a')?.v, feed.health()]).to.deep.equal(['2', true]);
    await feed.stop();
  });

  it('tells a waiter when a sequence is applied, or false at its deadline', async () => {
    const { log, feed } = setUp();
    await feed.start();
    expect(await feed.waitFor(0, 10)).to.equal(true);
    expect(await feed.waitFor(5, 20)).to.equal(false);
    log.add('keys', 'a');
    const waiting = feed.waitFor(1, 1000);
    log.wake!();
    expect(await waiting).to.equal(true);
    await feed.stop();
  });
});

describe('registry mirror (unit)', () => {
  it('tells its listeners only of rows whose version changed, appeared or went', async () => {
    const rows = new Map<string, { id: string; version: number }>([['a', { id: 'a', version: 1 }]]);
    const load = (ids?: readonly string[]) =>
      Promise.resolve([...rows.values()].filter((r) => ids === undefined || ids.includes(r.id)));
    const mirror = new Mirror(
      'pages',
      load,
      (r) => r.id,
      (r) => r.version,
    );
    const heard: string[][] = [];
    mirror.onChange((ids) => heard.push([...ids]));
    await mirror.reload();
    // This replica's own write, put before its notice comes back: the notice changes nothing.
    rows.set('a', { id: 'a', version: 2 });
    mirror.put({ id: 'a', version: 2 });
    await mirror.apply(['a']);
    rows.set('b', { id: 'b', version: 1 });
    rows.delete('a');
    await mirror.apply(['a', 'b', 'nothing']);
    expect(heard).to.deep.equal([['a'], ['a', 'b']]);
  });
});

describe('registry change feed: connections and a log that went back (unit)', () => {
  /** A clock whose timers run only when the test says. */
  function manualClock() {
    const timers: (() => void)[] = [];
    return {
      timers,
      clock: {
        now: () => 0,
        setTimeout: (fn: () => void) => {
          timers.push(fn);
          return {};
        },
        clearTimeout: () => {},
      },
    };
  }

  it('after a lost LISTEN connection, tries again one attempt at a time until one listens', async () => {
    const log = new MemoryLog();
    let attempts = 0;
    let failures = 3;
    let lose: ((err: Error) => void) | undefined;
    log.listen = (wake: () => void, lost?: (err: Error) => void) => {
      attempts++;
      log.wake = wake;
      if (attempts > 1 && failures-- > 0) return Promise.reject(new Error('refused'));
      lose = lost;
      return Promise.resolve({ close: () => Promise.resolve() });
    };
    const { timers, clock } = manualClock();
    const feed = new ChangeFeed({ name: 'test', log, catchUpMs: 1000, logger: silentLogger, clock });
    await feed.start();
    timers.length = 0; // the catch-up timer
    lose!(new Error('the LISTEN connection ended'));
    lose!(new Error('and an error after it'));
    expect(timers, 'one reconnection scheduled').to.have.length(1);
    for (let i = 0; i < 10 && timers.length > 0; i++) {
      const fire = timers.splice(0, timers.length);
      expect(fire, 'never two reconnections at once').to.have.length(1);
      fire[0]!();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    }
    expect(attempts, 'the first, three refused, one that listens').to.equal(5);
    expect(timers).to.have.length(0);
    await feed.stop();
  });

  it('loads everything again when the log went back behind its copy (a restore, a failover)', async () => {
    const log = new MemoryLog();
    const rows = new Rows();
    const mirror = new Mirror('keys', rows.load, (r: { id: string; v: string }) => r.id);
    const feed = new ChangeFeed({ name: 'test', log, catchUpMs: 3_600_000, logger: silentLogger });
    feed.subscribe(mirror);
    rows.rows.set('a', '1');
    log.add('keys', 'a');
    log.add('keys', 'a');
    await feed.start();
    expect(feed.sequence).to.equal(2);
    // Restored to sequence 1; a new change reuses sequence 2.
    log.entries = [{ seq: 1, entity: 'keys', id: 'a' }];
    rows.rows.set('b', 'new');
    log.add('keys', 'b');
    log.entries.pop();
    await feed.catchUp();
    expect(mirror.get('b')?.v, 'read by the full load').to.equal('new');
    expect(rows.loads.at(-1)).to.equal(undefined);
    await feed.stop();
  });

  it('never puts back an older version of a row than it holds', async () => {
    let version = 3;
    const load = () => Promise.resolve([{ id: 'm', version }]);
    const mirror = new Mirror(
      'monitors',
      load,
      (r) => r.id,
      (r) => r.version,
    );
    await mirror.reload();
    version = 2; // a read that started before the newer one ended
    await mirror.apply(['m']);
    expect(mirror.get('m')?.version).to.equal(3);
  });
});
