import { expect } from 'chai';
import { PartitionBatcher } from '@telemetry/platform';
import { settle } from './support/fakes.js';

interface Handed {
  topic: string;
  partition: number;
  messages: number[];
  generation: number;
  finish(): void;
}

function batcher(concurrency = 1, maxQueuedBytes = 1000) {
  const handed: Handed[] = [];
  const pressure: boolean[] = [];
  const b = new PartitionBatcher<number>({
    concurrency,
    maxQueuedBytes,
    sizeOf: () => 100,
    handle: (topic, partition, messages, generation) =>
      new Promise<void>((finish) => handed.push({ topic, partition, messages, generation, finish })),
    backpressure: (on) => pressure.push(on),
  });
  return { b, handed, pressure };
}

/** Lets setImmediate-scheduled dispatches run. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('partition batcher (unit)', () => {
  it('hands a partition everything queued for it as one batch, one batch per partition at a time', async () => {
    const { b, handed } = batcher(2);
    for (const n of [1, 2, 3]) b.enqueue('t', 0, n);
    await tick();
    expect(handed.map((h) => h.messages)).to.deep.equal([[1, 2, 3]]);
    b.enqueue('t', 0, 4);
    b.enqueue('t', 0, 5);
    await tick();
    expect(handed.length).to.equal(1); // partition 0 is still in hand
    handed[0]!.finish();
    await settle();
    await tick();
    expect(handed.map((h) => h.messages)).to.deep.equal([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('serves partitions in turn up to its concurrency', async () => {
    const { b, handed } = batcher(1);
    b.enqueue('t', 0, 1);
    b.enqueue('t', 1, 10);
    await tick();
    expect(handed.map((h) => h.partition)).to.deep.equal([0]);
    b.enqueue('t', 0, 2);
    handed[0]!.finish();
    await settle();
    await tick();
    // Partition 0 went to the back of the line: partition 1 is next.
    expect(handed.map((h) => h.partition)).to.deep.equal([0, 1]);
  });

  it('asks to pause past its byte bound and to resume below half of it', async () => {
    const { b, handed, pressure } = batcher(1, 250);
    for (const n of [1, 2, 3]) b.enqueue('t', 0, n);
    expect(pressure).to.deep.equal([true]);
    await tick(); // handed over: nothing queued any more
    expect(pressure).to.deep.equal([true, false]);
    expect(handed.length).to.equal(1);
  });

  it('hands requeued messages first, before what arrived meanwhile', async () => {
    const { b, handed } = batcher(1);
    b.enqueue('t', 0, 1);
    b.enqueue('t', 0, 2);
    await tick();
    b.enqueue('t', 0, 3);
    // The handler finished message 1 and hands 2 back.
    b.requeue('t', 0, [2]);
    handed[0]!.finish();
    await settle();
    await tick();
    expect(handed.map((h) => h.messages)).to.deep.equal([
      [1, 2],
      [2, 3],
    ]);
  });

  it('drops what was queued at a new generation, and never hands a partition a second batch while one is in hand', async () => {
    const { b, handed } = batcher(2);
    b.enqueue('t', 0, 1);
    await tick();
    b.enqueue('t', 0, 2);
    b.newGeneration();
    expect(b.queued).to.equal(0);
    b.enqueue('t', 0, 8);
    await tick();
    // Batch [1] (of generation 0) is still in hand: partition 0 waits, though a slot is free.
    expect(handed.map((h) => h.messages)).to.deep.equal([[1]]);
    handed[0]!.finish();
    await settle();
    await tick();
    expect(handed.map((h) => [h.messages, h.generation])).to.deep.equal([
      [[1], 0],
      [[8], 1],
    ]);
  });

  it('hands out nothing while paused', async () => {
    const { b, handed } = batcher(1);
    b.pause();
    b.enqueue('t', 0, 1);
    await tick();
    expect(handed).to.deep.equal([]);
    b.resume();
    await tick();
    expect(handed.length).to.equal(1);
  });
});
