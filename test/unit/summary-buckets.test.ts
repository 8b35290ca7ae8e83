import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { float32Shortest, LOCAL_LAYOUT, summaryBucketsSql, TDigest } from '@telemetry/store';
import { SummaryBuckets } from '../../services/query-service/src/summary-buckets.js';

/** States and answers of ClickHouse 18.16 (how they were made: the file's made_with). */
const fixture = JSON.parse(readFileSync(new URL('../fixtures/tdigest-states.json', import.meta.url), 'utf8')) as {
  states: { t: number; q: number[]; s: string }[];
  merged: number[];
};
const LEVELS = [0.5, 0.95, 0.99];

describe('TDigest (ClickHouse quantilesTDigest states)', () => {
  it("reads each state's quantiles as ClickHouse answers them, to the last digit it prints", () => {
    for (const st of fixture.states) {
      expect(TDigest.fromHex(st.s).size).to.be.above(3);
      expect(TDigest.fromHex(st.s).quantiles(LEVELS).map(float32Shortest)).to.deep.equal(st.q);
    }
  });

  it('merges states as quantilesTDigestMerge merges them in the same order', () => {
    const total = new TDigest();
    for (const st of fixture.states) total.merge(TDigest.fromHex(st.s));
    expect(total.quantiles(LEVELS).map(float32Shortest)).to.deep.equal(fixture.merged);
  });

  it('answers zeros when empty, the mean of a single centroid, and refuses malformed states', () => {
    expect(new TDigest().quantiles(LEVELS)).to.deep.equal([0, 0, 0]);
    // One centroid: mean 2.5 (0x40200000), count 1 (0x3f800000).
    expect(TDigest.fromHex('01000020400000803f').quantiles(LEVELS)).to.deep.equal([2.5, 2.5, 2.5]);
    expect(() => TDigest.fromHex('02000020400000803f')).to.throw(/wrong length/);
    expect(() => TDigest.fromHex('')).to.throw(/truncated/);
  });

  it('prints a Float32 the way ClickHouse does: the shortest decimal that reads back', () => {
    expect(float32Shortest(Math.fround(73.65179))).to.equal(73.65179);
    expect(float32Shortest(Math.fround(0.1))).to.equal(0.1);
    expect(float32Shortest(137)).to.equal(137);
    expect(float32Shortest(0)).to.equal(0);
  });
});

describe('summaryBucketsSql', () => {
  it('asks one statement: counts per status, quantiles and the state per bucket, values escaped', () => {
    const sql = summaryBucketsSql('db', LOCAL_LAYOUT, {
      tenantId: "t'x",
      monitorId: 'm',
      interval: 'day',
      from: 86_400,
      to: 3 * 86_400,
    });
    expect(sql).to.include("tenant_id = 't\\'x'");
    expect(sql).to.include("uniqExactMergeIf(checks, status = 'up')");
    expect(sql).to.include("uniqExactMergeIf(checks, status = 'degraded')");
    expect(sql).to.include('hex(toString(quantilesTDigestMergeState(0.5, 0.95, 0.99)(response_time)))');
    expect(sql).to.include('toStartOfDay(hour)');
    expect(sql).to.include('hour >= toDateTime(86400) AND hour < toDateTime(259200)');
  });
});

describe('SummaryBuckets', () => {
  const bucket = { n: [1, 0, 0], q: [1, 1, 1], digest: undefined };

  it('keeps buckets per tenant, monitor, interval and start, each for at most its maximum age', () => {
    let now = 1_000_000;
    const b = new SummaryBuckets(1 << 20, 60_000, () => now);
    const key = SummaryBuckets.key('t', 'm', 'day', 86_400);
    b.set(key, bucket);
    expect(b.get(key)).to.equal(bucket);
    expect(b.get(SummaryBuckets.key('t2', 'm', 'day', 86_400))).to.equal(undefined);
    expect(b.get(SummaryBuckets.key('t', 'm', 'hour', 86_400))).to.equal(undefined);
    now += 60_001;
    expect(b.get(key)).to.equal(undefined);
    expect(b.size().entries).to.equal(0);
  });

  it('stays within its bytes, dropping the least recently read first; 0 keeps nothing', () => {
    const b = new SummaryBuckets(1000, 60_000);
    for (let t = 0; t < 20; t++) b.set(SummaryBuckets.key('t', 'm', 'hour', t), bucket);
    expect(b.size().bytes).to.be.at.most(1000);
    expect(b.get(SummaryBuckets.key('t', 'm', 'hour', 19))).to.equal(bucket);
    expect(b.get(SummaryBuckets.key('t', 'm', 'hour', 0))).to.equal(undefined);
    const none = new SummaryBuckets(0, 60_000);
    none.set(SummaryBuckets.key('t', 'm', 'hour', 0), bucket);
    expect(none.size().entries).to.equal(0);
  });
});
