import { expect } from 'chai';
import { DurableConsumer, InOrderCommits, type CommittableOffset, type DurableBatch } from '@telemetry/platform';
import { fakeBatch, fakeGroupConsumers, settle, silentLogger } from './support/fakes.js';

/** A promise the test settles. */
function work(): { done: Promise<void>; finish(): void; fail(err: Error): void } {
  let finish = (): void => undefined;
  let fail = (_err: Error): void => undefined;
  const done = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return { done, finish, fail };
}

function commitsOf(maxPending = 100): { commits: InOrderCommits; sent: CommittableOffset[][] } {
  const sent: CommittableOffset[][] = [];
  const commits = new InOrderCommits({
    commit: (offsets) => {
      sent.push(offsets.map((o) => ({ ...o })));
      return Promise.resolve();
    },
    maxPending,
    logger: silentLogger,
  });
  return { commits, sent };
}

/** The newest committed offset of topic t, partition p, over every request. */
function committed(sent: CommittableOffset[][], p = 0): string | undefined {
  return sent
    .flat()
    .filter((o) => o.topic === 't' && o.partition === p)
    .map((o) => o.offset)
    .at(-1);
}

describe('in-order commits of out-of-order work (unit)', () => {
  it('commits a partition only up to its oldest unfinished piece when later pieces finish first', async () => {
    const { commits, sent } = commitsOf();
    const [a, b, c] = [work(), work(), work()];
    commits.track('t', 0, '9', a.done);
    commits.track('t', 0, '19', b.done);
    commits.track('t', 0, '29', c.done);
    c.finish();
    b.finish();
    await settle();
    expect(sent).to.deep.equal([]);
    a.finish();
    await commits.settle();
    // One commit past everything, not one per piece.
    expect(committed(sent)).to.equal('30');
    expect(sent.flat().map((o) => o.offset)).to.not.include('10');
    expect(commits.pending).to.equal(0);
  });

  it('never commits past a failed piece, nor past later pieces that finished', async () => {
    const { commits, sent } = commitsOf();
    const [a, b, c] = [work(), work(), work()];
    commits.track('t', 0, '9', a.done);
    commits.track('t', 0, '19', b.done);
    commits.track('t', 0, '29', c.done);
    a.finish();
    b.fail(new Error('insert failed'));
    c.finish();
    await commits.settle();
    expect(committed(sent)).to.equal('10');
    // Another partition is not held by it.
    const d = work();
    commits.track('t', 1, '4', d.done);
    d.finish();
    await commits.settle();
    expect(committed(sent, 1)).to.equal('5');
    expect(committed(sent)).to.equal('10');
  });

  it('commits nothing of what was tracked before a rebalance, and starts afresh after it', async () => {
    const { commits, sent } = commitsOf();
    const [a, b] = [work(), work()];
    commits.track('t', 0, '9', a.done);
    commits.revoke();
    a.finish();
    await commits.settle();
    expect(sent).to.deep.equal([]);
    // The partition came back: read again from the last commit, tracked anew.
    commits.track('t', 0, '9', b.done);
    b.finish();
    await commits.settle();
    expect(committed(sent)).to.equal('10');
  });

  it('keeps at most one commit request in flight, carrying the newest offset of every partition', async () => {
    const sent: CommittableOffset[][] = [];
    let release = (): void => undefined;
    const commits = new InOrderCommits({
      commit: (offsets) => {
        sent.push(offsets.map((o) => ({ ...o })));
        return sent.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
      maxPending: 100,
      logger: silentLogger,
    });
    const pieces = Array.from({ length: 4 }, () => work());
    commits.track('t', 0, '0', pieces[0]!.done);
    pieces[0]!.finish();
    await settle();
    expect(sent.length).to.equal(1);
    commits.track('t', 0, '1', pieces[1]!.done);
    commits.track('t', 0, '2', pieces[2]!.done);
    commits.track('t', 1, '7', pieces[3]!.done);
    for (const p of pieces.slice(1)) p.finish();
    await settle();
    expect(sent.length).to.equal(1); // the first is still in flight
    release();
    await commits.settle();
    expect(sent.length).to.equal(2);
    expect(sent[1]).to.have.deep.members([
      { topic: 't', partition: 0, offset: '3' },
      { topic: 't', partition: 1, offset: '8' },
    ]);
  });

  it('caps pending work per topic: no room at the cap, room again once a piece finishes; other topics unaffected', async () => {
    const { commits } = commitsOf(3);
    const a = work();
    const b = work();
    commits.track('t', 0, '0', a.done, 2);
    expect(commits.hasRoom('t')).to.equal(true);
    commits.track('t', 1, '1', b.done, 1);
    expect(commits.hasRoom('t')).to.equal(false);
    expect(commits.hasRoom('other')).to.equal(true);
    expect(await commits.waitForRoom('t', 20)).to.equal(false);
    const waiting = commits.waitForRoom('t', 5000);
    b.fail(new Error('x'));
    expect(await waiting).to.equal(true);
    expect(commits.pending).to.equal(2);
    a.finish();
    await commits.settle();
    expect(commits.pending).to.equal(0);
  });

  it('ends a wait for room at once when woken (a stop) or revoked, without room', async () => {
    const { commits } = commitsOf(1);
    commits.track('t', 0, '0', work().done);
    const started = Date.now();
    const waiting = commits.waitForRoom('t', 60_000);
    commits.wake();
    expect(await waiting).to.equal(false);
    const again = commits.waitForRoom('t', 60_000);
    commits.revoke();
    expect(await again).to.equal(false);
    expect(Date.now() - started).to.be.below(1000);
  });

  it('still commits the pieces before a failed one, and keeps nothing of those after it', async () => {
    const { commits, sent } = commitsOf();
    const [a, b, c] = [work(), work(), work()];
    commits.track('t', 0, '9', a.done);
    commits.track('t', 0, '19', b.done);
    b.fail(new Error('insert failed'));
    await settle();
    commits.track('t', 0, '29', c.done);
    c.finish();
    a.finish();
    await commits.settle();
    expect(committed(sent)).to.equal('10');
    expect(commits.pending).to.equal(0);
  });

  it('drops what became committable but was not yet sent when the partitions are taken away', async () => {
    const sent: CommittableOffset[][] = [];
    let release = (): void => undefined;
    const commits = new InOrderCommits({
      commit: (offsets) => {
        sent.push(offsets.map((o) => ({ ...o })));
        return sent.length === 1 ? new Promise<void>((r) => (release = r)) : Promise.resolve();
      },
      maxPending: 100,
      logger: silentLogger,
    });
    const [a, b] = [work(), work()];
    commits.track('t', 0, '0', a.done);
    a.finish();
    await settle(); // the first commit is in flight
    commits.track('t', 0, '1', b.done);
    b.finish();
    await settle(); // offset 2 is committable, waiting behind the first request
    commits.revoke();
    release();
    await commits.settle();
    expect(sent.flat().map((o) => o.offset)).to.deep.equal(['1']);
  });
});

describe('DurableConsumer (the consumer contract on a group consumer)', () => {
  it('resolves what the handler tracked, commits it once durable, and hands back a batch when there is no room', async () => {
    const { factory, built } = fakeGroupConsumers();
    const pieces: ReturnType<typeof work>[] = [];
    const consumer = new DurableConsumer(
      factory,
      {
        name: 'c',
        groupId: 'g',
        topics: ['t'],
        fromBeginning: true,
        consumer: {},
        stallAfterMs: 30_000,
        crashMessage: 'crashed',
        maxPending: 2,
        eachBatch: (b: DurableBatch) => {
          const w = work();
          pieces.push(w);
          b.track(b.lastOffset(), w.done, b.messages.length);
          return Promise.resolve();
        },
      },
      silentLogger,
    );
    const group = built[0]!;
    const first = fakeBatch('t', 0, 0, ['a', 'b']);
    await group.batch(first);
    expect(first.resolved).to.deep.equal(['1']);
    expect(group.commits).to.deep.equal([]);
    // At the cap (2 pending): the next batch waits ROOM_WAIT_MS, then is handed back unresolved.
    const second = fakeBatch('t', 0, 2, ['c']);
    await group.batch(second);
    expect(second.resolved).to.deep.equal([]);
    pieces[0]!.finish();
    await consumer.settle();
    expect(group.commits.flat()).to.deep.equal([{ topic: 't', partition: 0, offset: '2' }]);
    // A rebalance: what was tracked before it is never committed.
    const third = fakeBatch('t', 0, 2, ['c']);
    await group.batch(third);
    expect(third.resolved).to.deep.equal(['2']);
    group.spec.onRevoked?.();
    pieces[1]!.finish();
    await consumer.settle();
    expect(group.commits.flat()).to.deep.equal([{ topic: 't', partition: 0, offset: '2' }]);
  });
});
