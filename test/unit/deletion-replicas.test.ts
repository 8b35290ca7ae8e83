import { expect } from 'chai';
import type { ClickHouseClient, Engine } from '@telemetry/platform';
import { recomputeMinutes, SAME_REPLICA_SETTINGS, waitForMutations } from '@telemetry/store';

/** A client that records each statement with its settings, and answers "nothing left". */
function recorder(): { ch: ClickHouseClient; sent: { query: string; settings: Record<string, unknown> }[] } {
  const sent: { query: string; settings: Record<string, unknown> }[] = [];
  const record = (p: { query: string; clickhouse_settings?: Record<string, unknown> }) =>
    sent.push({ query: p.query, settings: p.clickhouse_settings ?? {} });
  const ch = {
    command: (p: { query: string; clickhouse_settings?: Record<string, unknown> }) => {
      record(p);
      return Promise.resolve({});
    },
    query: (p: { query: string; clickhouse_settings?: Record<string, unknown> }) => {
      record(p);
      return Promise.resolve({ json: () => Promise.resolve([{ n: '0' }]) });
    },
  } as unknown as ClickHouseClient;
  return { ch, sent };
}

describe('deletions on a cluster read the replica they waited for (unit)', () => {
  const engine = { modern: false } as Engine;

  it('the mutation wait, and the recompute that follows, ask each shard’s first replica', async () => {
    const { ch, sent } = recorder();
    const place = { cluster: 'c', readSettings: { max_replica_delay_for_distributed_queries: '30' } };
    await recomputeMinutes(ch, engine, 'db', 't1', ['tenant_id', 'minute', 'events'], [60], 1000, place);
    const wait = sent.find((s) => s.query.includes('system, mutations'))!;
    expect(wait.query).to.include(`cluster('c', system, mutations)`);
    expect(wait.settings).to.include({ load_balancing: 'in_order' });
    const insert = sent.find((s) => s.query.startsWith('INSERT INTO'))!;
    expect(insert.query).to.include('events_all');
    expect(insert.settings).to.include({ load_balancing: 'in_order', max_replica_delay_for_distributed_queries: '30' });
    expect(SAME_REPLICA_SETTINGS).to.deep.equal({ load_balancing: 'in_order' });
  });

  it('on one server no balancing is asked for', async () => {
    const { ch, sent } = recorder();
    await waitForMutations(ch, 'db', 'events', 1000);
    await recomputeMinutes(ch, engine, 'db', 't1', ['tenant_id', 'minute', 'events'], [60], 1000);
    for (const s of sent) expect(s.settings, s.query).to.not.have.property('load_balancing');
  });
});
