import { expect } from 'chai';
import { Registry } from 'prom-client';
import { PeriodicJob } from '@telemetry/platform';
import type { FreshnessRow } from '@telemetry/store';
import { Freshness } from '../../services/stream-consumer/src/freshness.js';
import { settle, silentLogger, until } from './support/fakes.js';

describe('freshness (unit)', () => {
  it('reports per table its topic’s lag and its last insert, and the same on /metrics', async () => {
    const registry = new Registry();
    const written: FreshnessRow[][] = [];
    const f = new Freshness({
      tables: () => [
        { topic: 'events-topic', table: '`db`.`events`' },
        { topic: 'checks-topic', table: 'db.checks' },
      ],
      lags: (topics) => Promise.resolve(new Map(topics.map((t) => [t, t === 'events-topic' ? 42 : 0]))),
      lastInsertAt: (table) => (table === '`db`.`events`' ? 1_800_000_000 : undefined),
      consumer: 'replica-1',
      insert: (rows) => {
        written.push(rows);
        return Promise.resolve();
      },
      registry,
    });
    await f.report();
    const rows = written[0]!.map(({ updated_at: _t, ...r }) => r);
    expect(rows).to.deep.equal([
      {
        table_name: 'events',
        topic: 'events-topic',
        consumer: 'replica-1',
        lag_messages: 42,
        last_insert_at: 1_800_000_000,
      },
      { table_name: 'checks', topic: 'checks-topic', consumer: 'replica-1', lag_messages: 0, last_insert_at: 0 },
    ]);
    const text = await registry.metrics();
    expect(text).to.include('consumer_table_last_insert_timestamp_seconds{table="events"} 1800000000');
    expect(text).not.to.include('table="checks"');
  });
});

describe('PeriodicJob (unit)', () => {
  it('runs at start and on its interval, one run at a time, and reports a failed run in health()', async () => {
    let runs = 0;
    let fail = true;
    let release = (): void => undefined;
    const job = new PeriodicJob(
      'test-job',
      10,
      () => {
        runs++;
        return new Promise<void>((resolve, reject) => {
          release = () => (fail ? reject(new Error('boom')) : resolve());
        });
      },
      silentLogger,
    );
    await job.start();
    expect(runs).to.equal(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(runs, 'no second run while the first is going').to.equal(1);
    release();
    await settle();
    expect(job.health()).to.equal(false);
    fail = false;
    await until(() => runs === 2, 'the next run');
    release();
    await settle();
    expect(job.health()).to.equal(true);
    await job.stop();
  });

  it('takes a run that throws instead of rejecting as a failed run', async () => {
    const job = new PeriodicJob(
      'throwing-job',
      60_000,
      () => {
        throw new Error('sync boom');
      },
      silentLogger,
    );
    await job.start();
    await settle();
    expect(job.health()).to.equal(false);
    await job.stop();
  });
});
