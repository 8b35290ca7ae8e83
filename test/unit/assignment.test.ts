import { expect } from 'chai';
import { Registry } from 'prom-client';
import { monitorPartition, type MonitorChange } from '@telemetry/store';
import { GroupAssignment } from '../../services/check-runner/src/assignment.js';
import { FakeClock, fakeGroupConsumers, silentLogger, type FakeGroupConsumer } from './support/fakes.js';

const TOPIC = 'monitor-changes';
const SESSION_MS = 10_000;

/** Monitor ids whose partition (of `partitions`) is `p`. */
function idsOn(p: number, partitions: number, count = 3): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < count; i++) {
    const id = `mon_${i.toString(16).padStart(16, '0')}`;
    if (monitorPartition(id, partitions) === p) ids.push(id);
  }
  return ids;
}

function setup(partitions = 4): {
  assignment: GroupAssignment;
  group: FakeGroupConsumer;
  clock: FakeClock;
  changes: { count: number };
  notices: MonitorChange[];
  counts: { partitions: number };
} {
  const { factory, built } = fakeGroupConsumers();
  const clock = new FakeClock();
  const changes = { count: 0 };
  const notices: MonitorChange[] = [];
  const counts = { partitions };
  const assignment = new GroupAssignment({
    consumers: factory,
    countPartitions: (topic) => {
      expect(topic).to.equal(TOPIC);
      return Promise.resolve(counts.partitions);
    },
    logger: silentLogger,
    registry: new Registry(),
    topic: TOPIC,
    groupId: 'runners',
    sessionTimeoutMs: SESSION_MS,
    onNotice: (c) => notices.push(c),
    onChange: () => changes.count++,
    clock,
  });
  return { assignment, group: built[0]!, clock, changes, notices, counts };
}

describe('runner group assignment (unit)', () => {
  it('owns nothing before it joins the group', async () => {
    const { assignment, group } = setup();
    await assignment.start();
    expect(group.calls).to.deep.equal(['start']);
    for (const id of idsOn(0, 4)) expect(assignment.owns(id)).to.equal(false);
    expect(assignment.health(), 'not joined').to.equal(false);
  });

  it('owns exactly the monitors of its assigned partitions once joined', async () => {
    const { assignment, group, changes } = setup();
    await assignment.start();
    const before = changes.count;
    group.assign({ [TOPIC]: [1, 3] });
    expect(changes.count).to.be.greaterThan(before);
    expect(assignment.ownedPartitions()).to.deep.equal([1, 3]);
    for (const id of [...idsOn(1, 4), ...idsOn(3, 4)]) expect(assignment.owns(id), id).to.equal(true);
    for (const id of [...idsOn(0, 4), ...idsOn(2, 4)]) expect(assignment.owns(id), id).to.equal(false);
    expect(assignment.health()).to.equal(true);
  });

  it('drops everything the moment a rebalance, stop or crash is reported', async () => {
    const { assignment, group, changes } = setup();
    await assignment.start();
    group.assign({ [TOPIC]: [0, 1, 2, 3] });
    const before = changes.count;
    group.spec.onRevoked?.();
    expect(changes.count).to.equal(before + 1);
    expect(assignment.ownedPartitions()).to.deep.equal([]);
    for (const id of idsOn(0, 4)) expect(assignment.owns(id)).to.equal(false);
    // Rejoining gives ownership back.
    group.assign({ [TOPIC]: [0] });
    for (const id of idsOn(0, 4)) expect(assignment.owns(id)).to.equal(true);
  });

  it('lets ownership lapse after half a session without a heartbeat, and a heartbeat restores it', async () => {
    const { assignment, group, clock } = setup();
    await assignment.start();
    group.assign({ [TOPIC]: [2] });
    const [id] = idsOn(2, 4);
    await clock.advance(SESSION_MS / 2);
    expect(assignment.owns(id!), 'exactly half a session').to.equal(true);
    await clock.advance(1);
    expect(assignment.owns(id!), 'past half a session').to.equal(false);
    group.spec.onHeartbeat?.();
    expect(assignment.owns(id!)).to.equal(true);
  });

  it('reports a change when a heartbeat restores lapsed ownership (the same partitions)', async () => {
    const { assignment, group, clock, changes } = setup();
    await assignment.start();
    group.assign({ [TOPIC]: [2] });
    const [id] = idsOn(2, 4);
    group.spec.onHeartbeat?.();
    const steady = changes.count;
    await clock.advance(SESSION_MS / 2);
    group.spec.onHeartbeat?.();
    expect(changes.count, 'a heartbeat within half a session is no change').to.equal(steady);
    await clock.advance(SESSION_MS / 2 + 1);
    expect(assignment.owns(id!)).to.equal(false);
    group.spec.onHeartbeat?.();
    expect(assignment.owns(id!)).to.equal(true);
    expect(changes.count, 'owners reconcile again').to.equal(steady + 1);
    // The same partitions assigned again after that: still no spurious change.
    group.assign({ [TOPIC]: [2] });
    expect(changes.count).to.equal(steady + 1);
  });

  it('maps monitors with the topic’s current partition count, recounted at every join', async () => {
    const { assignment, group, counts, changes } = setup(4);
    await assignment.start();
    const [id] = idsOn(1, 2, 20).filter((i) => monitorPartition(i, 4) !== 1);
    // With 4 partitions `id` is elsewhere; once the topic has 2 it is on partition 1.
    group.assign({ [TOPIC]: [1] });
    expect(assignment.owns(id!)).to.equal(false);
    counts.partitions = 2;
    const before = changes.count;
    group.assign({ [TOPIC]: [1] });
    await Promise.resolve();
    await Promise.resolve();
    expect(changes.count, 'a new count is a change').to.be.greaterThan(before);
    expect(assignment.owns(id!)).to.equal(true);
  });

  it('owns nothing while the topic has no partitions', async () => {
    const { assignment, group } = setup(0);
    await assignment.start();
    group.assign({ [TOPIC]: [0] });
    expect(assignment.owns('mon_0000000000000000')).to.equal(false);
  });

  it('passes registry change notices on, and ignores messages that are not notices', async () => {
    const { assignment, group, notices } = setup();
    await assignment.start();
    await group.message(TOPIC, 0, JSON.stringify({ id: 'mon_1', version: 2, deleted: false }));
    await group.message(TOPIC, 0, '{not json');
    await group.message(TOPIC, 0, JSON.stringify({ nothing: 1 }));
    await group.message(TOPIC, 0, null);
    expect(notices).to.deep.equal([{ id: 'mon_1', version: 2, deleted: false }]);
  });

  it('gives everything up on stop, before leaving the group', async () => {
    const { assignment, group } = setup();
    await assignment.start();
    group.assign({ [TOPIC]: [0, 1, 2, 3] });
    await assignment.stop();
    expect(group.calls).to.deep.equal(['start', 'stop']);
    expect(assignment.ownedPartitions()).to.deep.equal([]);
    expect(assignment.health()).to.equal(false);
  });

  it('is unhealthy when the group consumer’s loop stalls', async () => {
    const { assignment, group } = setup();
    await assignment.start();
    group.assign({ [TOPIC]: [0] });
    expect(assignment.health()).to.equal(true);
    group.healthy = false;
    expect(assignment.health()).to.equal(false);
  });
});
