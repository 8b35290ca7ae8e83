import { expect } from 'chai';
import type { ConsumerConfig, ConsumerRunConfig, Kafka } from 'kafkajs';
import { KafkaGroupConsumer, type GroupConsumerSpec, type GroupMessage } from '@telemetry/platform';
import { FakeClock, fakeBatch, kafkaMessage, LineLogger, settle } from './support/fakes.js';

/**
 * Stands in for kafkajs's Consumer at the seam the component uses: it records calls and
 * lets the test emit the instrumentation events kafkajs emits (no broker behaviour).
 */
class ConsumerSeam {
  readonly events = {
    GROUP_JOIN: 'group_join',
    HEARTBEAT: 'heartbeat',
    REBALANCING: 'rebalancing',
    STOP: 'stop',
    CRASH: 'crash',
  } as const;
  readonly calls: unknown[][] = [];
  config: ConsumerConfig | undefined;
  runConfig: ConsumerRunConfig | undefined;
  private readonly listeners = new Map<string, ((e: { payload: unknown }) => void)[]>();

  on(event: string, listener: (e: { payload: unknown }) => void): void {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
  }
  emit(event: keyof ConsumerSeam['events'], payload: unknown = {}): void {
    for (const l of this.listeners.get(this.events[event]) ?? []) l({ payload });
  }
  connect(): Promise<void> {
    this.calls.push(['connect']);
    return Promise.resolve();
  }
  subscribe(s: unknown): Promise<void> {
    this.calls.push(['subscribe', s]);
    return Promise.resolve();
  }
  run(config: ConsumerRunConfig): Promise<void> {
    this.calls.push(['run']);
    this.runConfig = config;
    return Promise.resolve();
  }
  commitOffsets(offsets: unknown): Promise<void> {
    this.calls.push(['commitOffsets', offsets]);
    return Promise.resolve();
  }
  pause(topics: unknown): void {
    this.calls.push(['pause', topics]);
  }
  disconnect(): Promise<void> {
    this.calls.push(['disconnect']);
    return Promise.resolve();
  }
}

const STALL_MS = 30_000;

function setup(over: Record<string, unknown> = {}) {
  const seam = new ConsumerSeam();
  const kafka = {
    consumer: (config: ConsumerConfig) => {
      seam.config = config;
      return seam;
    },
  } as unknown as Kafka;
  const clock = new FakeClock();
  const logger = new LineLogger();
  const events: string[] = [];
  const spec = {
    name: 'test-group',
    groupId: 'g1',
    topics: ['a', 'b'],
    fromBeginning: true,
    consumer: { sessionTimeout: 30_000, heartbeatInterval: 3000 },
    manualCommit: true as const,
    eachBatch: () => Promise.resolve(),
    stallAfterMs: STALL_MS,
    crashMessage: 'test consumer crashed',
    onAssigned: (a: Readonly<Record<string, readonly number[]>>) => events.push(`assigned ${JSON.stringify(a)}`),
    onRevoked: () => events.push('revoked'),
    onHeartbeat: () => events.push('heartbeat'),
    onCrash: (restart: boolean) => events.push(`crash ${restart}`),
    ...over,
  } as GroupConsumerSpec;
  // An override of `undefined` removes the field (an eachMessage user has no eachBatch).
  for (const [k, v] of Object.entries(over))
    if (v === undefined) delete (spec as unknown as Record<string, unknown>)[k];
  const group = new KafkaGroupConsumer(kafka, logger.logger, spec, clock);
  return { seam, clock, group, events, logger };
}

describe('group consumer component (unit)', () => {
  it('builds the kafkajs consumer from the spec and runs batches with manual resolve and commit', async () => {
    const { seam, group } = setup();
    expect(seam.config).to.deep.equal({ sessionTimeout: 30_000, heartbeatInterval: 3000, groupId: 'g1' });
    expect(group.name).to.equal('test-group');
    await group.start();
    expect(seam.calls).to.deep.equal([
      ['connect'],
      ['subscribe', { topics: ['a', 'b'], fromBeginning: true }],
      ['run'],
    ]);
    expect(seam.runConfig).to.include({ autoCommit: false, eachBatchAutoResolve: false });
    expect(seam.runConfig?.eachBatch).to.be.a('function');
    expect(seam.runConfig?.eachMessage).to.equal(undefined);
  });

  it('runs eachMessage users with kafkajs committing after each message', async () => {
    const seen: string[] = [];
    const { seam, group } = setup({
      manualCommit: undefined,
      eachBatch: undefined,
      eachMessage: ({ message }: GroupMessage) => {
        seen.push(String(message.value));
        return Promise.resolve();
      },
      partitionsConsumedConcurrently: 4,
    });
    await group.start();
    expect(seam.runConfig?.autoCommit).to.equal(undefined);
    expect(seam.runConfig?.partitionsConsumedConcurrently).to.equal(4);
    await seam.runConfig!.eachMessage!({
      topic: 'a',
      partition: 0,
      message: { ...kafkaMessage('hello', '5'), attributes: 0, headers: {} },
      heartbeat: () => Promise.resolve(),
      pause: () => () => undefined,
    });
    expect(seen).to.deep.equal(['hello']);
  });

  it('is healthy once running, and stays so without partitions however quiet it is', async () => {
    const { group, clock } = setup();
    expect(group.health(), 'before start').to.equal(false);
    await group.start();
    expect(group.health()).to.equal(true);
    await clock.advance(STALL_MS * 10);
    expect(group.health()).to.equal(true);
  });

  it('notices a stalled loop: partitions held and no heartbeat or batch for stallAfterMs', async () => {
    const { seam, group, clock, events } = setup();
    await group.start();
    seam.emit('GROUP_JOIN', { memberAssignment: { a: [0, 1], b: [] } });
    expect(group.joined).to.equal(true);
    expect(events).to.deep.equal(['assigned {"a":[0,1],"b":[]}']);
    await clock.advance(STALL_MS);
    expect(group.health(), 'exactly stallAfterMs').to.equal(true);
    await clock.advance(1);
    expect(group.health(), 'stalled').to.equal(false);
    seam.emit('HEARTBEAT');
    expect(group.health(), 'a heartbeat is progress').to.equal(true);
    expect(events).to.include('heartbeat');
  });

  it('counts a batch starting and ending as progress, and a handler stuck past stallAfterMs as a stall', async () => {
    let release: () => void = () => undefined;
    const { seam, group, clock } = setup({ eachBatch: () => new Promise<void>((r) => (release = r)) });
    await group.start();
    seam.emit('GROUP_JOIN', { memberAssignment: { a: [0] } });
    await clock.advance(STALL_MS - 10);
    const handling = seam.runConfig!.eachBatch!(
      fakeBatch('a', 0, 0, ['x']) as unknown as Parameters<NonNullable<ConsumerRunConfig['eachBatch']>>[0],
    );
    await clock.advance(STALL_MS);
    expect(group.health(), 'the batch started 30 s ago').to.equal(true);
    await clock.advance(1);
    expect(group.health(), 'stuck in the handler').to.equal(false);
    release();
    await handling;
    expect(group.health(), 'the batch ended').to.equal(true);
  });

  it('is healthy again when a rebalance takes its partitions, and tells its user', async () => {
    const { seam, group, clock, events } = setup();
    await group.start();
    seam.emit('GROUP_JOIN', { memberAssignment: { a: [0] } });
    await clock.advance(STALL_MS + 1);
    expect(group.health()).to.equal(false);
    seam.emit('REBALANCING');
    expect(group.health()).to.equal(true);
    seam.emit('STOP');
    expect(events.filter((e) => e === 'revoked')).to.have.length(2);
  });

  it('logs a crash; only one kafkajs does not restart from makes it unhealthy', async () => {
    const { seam, group, events, logger } = setup();
    await group.start();
    seam.emit('GROUP_JOIN', { memberAssignment: { a: [0] } });
    seam.emit('CRASH', { error: new Error('coordinator loading'), restart: true });
    expect(group.health()).to.equal(true);
    expect(group.joined).to.equal(true);
    seam.emit('CRASH', { error: new Error('fatal'), restart: false });
    expect(group.health()).to.equal(false);
    expect(group.joined).to.equal(false);
    expect(events).to.deep.equal(['assigned {"a":[0]}', 'revoked', 'crash true', 'revoked', 'crash false']);
    const crashes = logger.entries().filter((e) => e.message === 'test consumer crashed');
    expect(crashes.map((e) => [e.level, e.restart])).to.deep.equal([
      ['warn', true],
      ['error', false],
    ]);
  });

  it('commits, pauses every subscribed topic, and leaves the group on stop', async () => {
    const { seam, group } = setup();
    await group.start();
    seam.emit('GROUP_JOIN', { memberAssignment: { a: [0] } });
    await group.commitOffsets([{ topic: 'a', partition: 0, offset: '8' }]);
    group.pause();
    await group.stop();
    await settle();
    expect(seam.calls.slice(3)).to.deep.equal([
      ['commitOffsets', [{ topic: 'a', partition: 0, offset: '8' }]],
      ['pause', [{ topic: 'a' }, { topic: 'b' }]],
      ['disconnect'],
    ]);
    expect(group.health()).to.equal(false);
    expect(group.joined).to.equal(false);
  });
});
