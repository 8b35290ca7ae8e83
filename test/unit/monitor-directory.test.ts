import { expect } from 'chai';
import { Registry as PromRegistry } from 'prom-client';
import { MonitorDirectory } from '../../services/query-service/src/monitor-directory.js';
import { FakeClock, settle, silentLogger } from './support/fakes.js';

/** The registry as the directory sees it: the current ids, and whether it answers. */
const T = 'ten_a';

class Registry {
  ids = ['mon_a', 'mon_b'];
  /** Monitors of another tenant. */
  others = ['mon_x'];
  down = false;
  readonly lookups: (readonly string[] | undefined)[] = [];
  lookup = (ids?: readonly string[]): Promise<{ id: string; tenantId: string }[]> => {
    this.lookups.push(ids);
    if (this.down) return Promise.reject(new Error('ClickHouse is away'));
    const all = [
      ...this.ids.map((id) => ({ id, tenantId: T })),
      ...this.others.map((id) => ({ id, tenantId: 'ten_b' })),
    ];
    return Promise.resolve(ids ? all.filter((m) => ids.includes(m.id)) : all);
  };
}

describe('monitor directory (unit)', () => {
  it('answers from the set of all ids, and looks up an id it does not hold on its own', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const d = new MonitorDirectory(registry.lookup, 5000, silentLogger, clock);
    await d.start();
    expect(registry.lookups).to.deep.equal([undefined]);
    expect(await d.exists('mon_a', T)).to.equal(true);
    expect(registry.lookups, 'a Set lookup').to.have.length(1);
    registry.ids.push('mon_new'); // created on another replica
    expect(await d.exists('mon_new', T)).to.equal(true);
    expect(await d.exists('mon_new', T)).to.equal(true);
    expect(await d.exists('mon_none', T)).to.equal(false);
    expect(registry.lookups.slice(1)).to.deep.equal([['mon_new'], ['mon_none']]);
    await d.stop();
  });

  it("answers false for another tenant's monitor, held in the set or looked up on its own", async () => {
    const registry = new Registry();
    const d = new MonitorDirectory(registry.lookup, 5000, silentLogger, new FakeClock());
    await d.start();
    expect(await d.exists('mon_x', T), 'in the set, of ten_b').to.equal(false);
    expect(await d.exists('mon_x', 'ten_b')).to.equal(true);
    expect(await d.exists('mon_a', 'ten_b'), 'of ten_a').to.equal(false);
    registry.others.push('mon_y'); // created on another replica, for ten_b
    expect(await d.exists('mon_y', T), 'looked up').to.equal(false);
    expect(await d.exists('mon_y', 'ten_b'), 'now held').to.equal(true);
    // Each (tenant, id) not the tenant's is looked up once, held in the set or not.
    expect(registry.lookups.slice(1)).to.deep.equal([['mon_x'], ['mon_a'], ['mon_y']]);
    await d.stop();
  });

  it("does the same work for another tenant's id as for an unknown one, and looks each up once until the next reload", async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const metrics = new PromRegistry();
    const d = new MonitorDirectory(registry.lookup, 5000, silentLogger, clock, metrics);
    await d.start();
    const answers = async (): Promise<Record<string, number>> =>
      Object.fromEntries(
        ((await metrics.getSingleMetric('query_monitor_lookups_total')?.get())?.values ?? []).map((v) => [
          String(v.labels.answer),
          v.value,
        ]),
      );
    const work = async (id: string): Promise<{ lookups: number; answers: Record<string, number> }> => {
      const lookups = registry.lookups.length;
      const before = await answers();
      for (let i = 0; i < 50; i++) expect(await d.exists(id, T), id).to.equal(false);
      const after = await answers();
      return {
        lookups: registry.lookups.length - lookups,
        answers: Object.fromEntries(Object.entries(after).map(([k, n]) => [k, n - (before[k] ?? 0)])),
      };
    };
    const foreign = await work('mon_x'); // held, of ten_b
    const unknown = await work('mon_none');
    expect(foreign).to.deep.equal({ lookups: 1, answers: { looked_up: 1, not_held_cached: 49 } });
    expect(unknown, 'the same as for the foreign id').to.deep.equal(foreign);
    // A reload forgets what was not found: a monitor created since on another replica shows.
    registry.ids.push('mon_none');
    await clock.advance(5000);
    expect(await d.exists('mon_none', T)).to.equal(true);
    // A monitor created here is found at once, though it was not found before.
    expect(await d.exists('mon_here', T)).to.equal(false);
    d.remember('mon_here', T);
    expect(await d.exists('mon_here', T)).to.equal(true);
    await d.stop();
  });

  it('forgets deleted ids at once here, and at the next reload for other replicas', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const d = new MonitorDirectory(registry.lookup, 5000, silentLogger, clock);
    await d.start();
    d.forget('mon_a');
    registry.ids = ['mon_b'];
    expect(await d.exists('mon_a', T)).to.equal(false);
    d.remember('mon_c', T);
    expect(await d.exists('mon_c', T)).to.equal(true);
    await clock.advance(5000);
    expect(
      registry.lookups.filter((l) => l === undefined),
      'reloaded',
    ).to.have.length(2);
    expect(await d.exists('mon_c', T), 'not in the registry after the reload').to.equal(false);
    await d.stop();
  });

  it('starts while ClickHouse is away, then loads the set when it is back; healthy only with a recent set', async () => {
    const registry = new Registry();
    registry.down = true;
    const clock = new FakeClock();
    const d = new MonitorDirectory(registry.lookup, 5000, silentLogger, clock);
    await d.start();
    expect(d.health()).to.equal(false);
    expect(d.essential).to.equal(false);
    registry.down = false;
    await clock.advance(5000);
    await settle();
    expect(d.health()).to.equal(true);
    registry.down = true;
    await clock.advance(25_000);
    expect(d.health(), 'stale after three refreshes and 10 s').to.equal(false);
    await d.stop();
    expect(clock.pending).to.equal(0);
  });
});
