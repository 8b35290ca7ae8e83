import { expect } from 'chai';
import type { ClickHouseClient } from '@telemetry/platform';
import type { CpuWindow } from '../../harness/sampler.js';
import { drain } from '../../bench/consume/drain.js';

/**
 * bench:consume's drain counter (bench/consume/drain.ts): with a shortfall allowed (the
 * Kafka engine path), a count that stops a few rows short ends the drain at its last row,
 * reporting the missing rows; a count that reaches the total reports none.
 */
function counting(counts: number[]): ClickHouseClient {
  let i = 0;
  const next = (): number => counts[Math.min(i++, counts.length - 1)]!;
  return {
    query: () => Promise.resolve({ text: () => Promise.resolve(`${next()}\n`) }),
  } as unknown as ClickHouseClient;
}
const cpu = (): CpuWindow => ({ seconds: 0, processes: {}, kernel: {}, otherPercent: 0 }) as unknown as CpuWindow;

describe('bench:consume drain (unit)', () => {
  it('ends an engine drain that stops short at its last row, with the missing rows', async function () {
    this.timeout(10_000);
    const start = performance.now();
    const d = await drain(counting([0, 500, 999]), 't', start, 'engine', cpu, () => undefined, 1000, {
      quietMs: 800,
      minShare: 0.99,
    });
    expect(d.rows).to.equal(999);
    expect(d.missingRows).to.equal(1);
    // The end is when the 999th row was first seen (the third count), not after the quiet wait.
    const waited = (performance.now() - start) / 1000;
    expect(d.seconds).to.be.lessThan(waited - 0.7);
    expect(d.rowsPerSecond).to.be.closeTo(999 / d.seconds, 1e-6);
    expect(d.timeline.at(-1)).to.equal(999);
  });

  it('reports no missing rows when every row arrives', async () => {
    const d = await drain(counting([0, 1000]), 't', performance.now(), 'ours', cpu, () => undefined, 1000, {
      quietMs: 800,
      minShare: 0.99,
    });
    expect([d.rows, d.missingRows]).to.deep.equal([1000, 0]);
  });
});
