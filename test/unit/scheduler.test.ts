import { expect } from 'chai';
import { Registry } from 'prom-client';
import { LOCATION_PATTERN, type AlertMessage, type CheckMessage } from '@telemetry/contract';
import { DEFAULT_MONITOR, type StoredMonitor } from '@telemetry/store';
import { alertIdFor } from '../../services/check-runner/src/alerts.js';
import { MAX_TENANT_LABELS } from '../../services/check-runner/src/metrics.js';
import type { ProbeContext, ProbeResult } from '../../services/check-runner/src/probes/index.js';
import {
  decidedByChecker,
  decideGroupId,
  decidesHere,
  decisionAt,
  firstUndecidedSlot,
} from '../../services/check-runner/src/decision.js';
import { Scheduler } from '../../services/check-runner/src/scheduler.js';
import { checkIdFor, nextSlot } from '../../services/check-runner/src/slots.js';
import type { AlertState } from '../../services/check-runner/src/state.js';
import { FakeClock, settle, silentLogger } from './support/fakes.js';

const SETTLE_MS = 1000;

function monitor(id: string, over: Partial<StoredMonitor> = {}): StoredMonitor {
  return {
    ...DEFAULT_MONITOR,
    tenant_id: 'ten_a',
    key: null,
    id,
    name: id,
    url: `http://${id}.test/`,
    interval_seconds: 10,
    failure_threshold: 2,
    recovery_threshold: 1,
    webhook_secret: 'secret',
    created_at: '2026-11-22T00:00:00Z',
    updated_at: '2026-11-22T00:00:00Z',
    version: 1,
    ...over,
  };
}

const UP: ProbeResult = { status: 'up', status_code: 200, response_time: 12 };
const DOWN: ProbeResult = { status: 'down', status_code: 0, response_time: 3, error: 'connection_refused' };

class Harness {
  readonly clock = new FakeClock();
  monitors: StoredMonitor[] = [];
  readonly owned = new Set<string>();
  /** Monitors whose partition it owns in the decide group. */
  readonly decided = new Set<string>();
  readonly stateLoads: string[][] = [];
  states = new Map<string, AlertState>();
  readonly probes: { id: string; ctx: Omit<ProbeContext, 'policy'> }[] = [];
  /** Results the next probes return, in order (then UP). */
  readonly results: ProbeResult[] = [];
  /** When set, probes wait for it (or for their abort)... */
  gate: Promise<void> | undefined;
  /** ...those of the monitors this says (all by default). */
  gated: (m: StoredMonitor) => boolean = () => true;
  readonly registry = new Registry();
  readonly checks: CheckMessage[] = [];
  readonly alerts: AlertMessage[] = [];
  failChecks = 0;
  failAlerts = 0;
  /** What the other locations' stored checks of a slot say, and how many of them are stored. */
  peerStatus: CheckMessage['status'] = 'up';
  peersStored = 99;
  readonly slotReads: string[][] = [];
  readonly scheduler: Scheduler;

  constructor(location = 'default') {
    this.scheduler = new Scheduler({
      monitors: { all: () => this.monitors },
      owns: (id) => this.owned.has(id),
      decides: (id) => this.decided.has(id),
      loadStates: (ids) => {
        this.stateLoads.push(ids);
        return Promise.resolve(this.states);
      },
      probe: async (m, ctx) => {
        this.probes.push({ id: m.id, ctx });
        if (this.gate && this.gated(m)) {
          const aborted = new Promise<void>((resolve) => ctx.signal?.addEventListener('abort', () => resolve()));
          await Promise.race([this.gate, aborted]);
        }
        return this.results.shift() ?? UP;
      },
      slotChecks: (m, ids) => {
        this.slotReads.push(ids);
        // Its own published checks are stored; the other locations' say peerStatus.
        const own = this.checks.filter((c) => ids.includes(c.id));
        const peers = ids.filter((id) => !own.some((c) => c.id === id));
        const stored = peers.slice(0, this.peersStored).map((id) => ({
          id,
          monitor_id: m.id,
          tenant_id: m.tenant_id,
          status: this.peerStatus,
          response_time: 4,
          status_code: this.peerStatus === 'down' ? 500 : 200,
          location: 'eu',
          created_at: new Date(this.clock.now()).toISOString(),
        }));
        return Promise.resolve([...own, ...stored]);
      },
      publishCheck: (c) => {
        if (this.failChecks > 0) {
          this.failChecks--;
          return Promise.reject(new Error('Kafka is away'));
        }
        this.checks.push(c);
        return Promise.resolve();
      },
      publishAlert: (a) => {
        if (this.failAlerts > 0) {
          this.failAlerts--;
          return Promise.reject(new Error('Kafka is away'));
        }
        this.alerts.push(a);
        return Promise.resolve();
      },
      logger: silentLogger,
      registry: this.registry,
      runnerId: 'r1',
      location,
      maxConcurrentChecks: 10,
      maxBodyBytes: 1024,
      stateSettleMs: SETTLE_MS,
      clock: this.clock,
    });
  }

  /** Starts with `m` owned and waits until its state is loaded; returns its first slot. */
  async startWith(...ms: StoredMonitor[]): Promise<number> {
    this.monitors = ms;
    for (const m of ms) {
      this.owned.add(m.id);
      this.decided.add(m.id);
    }
    await this.scheduler.start();
    await this.clock.advance(SETTLE_MS);
    return nextSlot(ms[0]!.id, ms[0]!.interval_seconds, this.clock.now());
  }

  /** Advances to `t` exactly. */
  async at(t: number): Promise<void> {
    await this.clock.advance(t - this.clock.now());
  }
}

describe('check scheduler with a fake clock (unit)', () => {
  it('loads the state of a newly owned monitor after the settle time, then checks it on its slot grid', async () => {
    const h = new Harness();
    h.monitors = [monitor('mon_a')];
    h.owned.add('mon_a');
    await h.scheduler.start();
    await h.clock.advance(SETTLE_MS - 1);
    expect(h.stateLoads, 'not before the settle time').to.deep.equal([]);
    await h.clock.advance(1);
    expect(h.stateLoads).to.deep.equal([['mon_a']]);
    const slot = nextSlot('mon_a', 10, h.clock.now());
    await h.at(slot - 1);
    expect(h.probes).to.have.length(0);
    await h.at(slot);
    expect(h.probes.map((p) => p.ctx.checkId)).to.deep.equal([checkIdFor('mon_a', slot)]);
    expect(h.checks.map((c) => c.id)).to.deep.equal([checkIdFor('mon_a', slot)]);
    await h.at(slot + 10_000);
    expect(h.checks.map((c) => c.id)).to.deep.equal([checkIdFor('mon_a', slot), checkIdFor('mon_a', slot + 10_000)]);
    await h.scheduler.stop();
  });

  it('schedules only the monitors it owns and that are not paused', async () => {
    const h = new Harness();
    h.monitors = [monitor('mon_a'), monitor('mon_b'), monitor('mon_c', { paused: true })];
    h.owned.add('mon_a').add('mon_c');
    await h.scheduler.start();
    expect(h.scheduler.scheduled()).to.deep.equal(['mon_a']);
    h.owned.add('mon_b');
    h.scheduler.reconcile();
    expect(h.scheduler.scheduled().sort()).to.deep.equal(['mon_a', 'mon_b']);
    h.owned.delete('mon_a');
    h.scheduler.reconcile();
    expect(h.scheduler.scheduled()).to.deep.equal(['mon_b']);
    await h.scheduler.stop();
  });

  it('goes down after failure_threshold failing checks with one alert, and up again with one', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a'));
    h.results.push(DOWN, DOWN, DOWN, UP);
    for (let i = 0; i < 4; i++) await h.at(slot + i * 10_000);
    expect(h.checks.map((c) => c.status)).to.deep.equal(['down', 'down', 'down', 'up']);
    expect(h.alerts.map((a) => a.type)).to.deep.equal(['monitor.down', 'monitor.up']);
    const incident = checkIdFor('mon_a', slot);
    expect(h.alerts.map((a) => a.incident_id)).to.deep.equal([incident, incident]);
    expect(h.alerts[0]!.id).to.equal(alertIdFor('mon_a', { type: 'monitor.down', incidentId: incident }));
    await h.scheduler.stop();
  });

  it('tries a failing check again after confirm_delay_ms: only a second failure counts', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a', { failure_threshold: 1, confirm_delay_ms: 2000 }));
    // A blip: down, then up on the confirmation; the slot's check is up, no alert.
    h.results.push(DOWN, UP);
    await h.at(slot);
    expect(h.probes).to.have.length(1);
    expect(h.checks).to.deep.equal([]);
    await h.at(slot + 1999);
    expect(h.probes).to.have.length(1);
    await h.at(slot + 2000);
    expect(h.probes.map((p) => p.ctx.checkId)).to.deep.equal([checkIdFor('mon_a', slot), checkIdFor('mon_a', slot)]);
    expect(h.checks.map((c) => [c.id, c.status])).to.deep.equal([[checkIdFor('mon_a', slot), 'up']]);
    expect(h.alerts).to.deep.equal([]);
    // Down twice: the confirmation's result is the check, and the monitor goes down.
    h.results.push(DOWN, DOWN);
    await h.at(slot + 12_000);
    expect(h.checks.map((c) => c.status)).to.deep.equal(['up', 'down']);
    expect(h.alerts.map((a) => a.type)).to.deep.equal(['monitor.down']);
    // A refused target is not tried again.
    h.results.push({ ...DOWN, error: 'target_not_allowed' });
    await h.at(slot + 20_000);
    expect(h.probes).to.have.length(5);
    expect(h.checks.map((c) => c.error)).to.deep.equal([undefined, 'connection_refused', 'target_not_allowed']);
    await h.scheduler.stop();
  });

  it('marks changes made in a maintenance window, and pages once the window is over and the monitor still down', async () => {
    const h = new Harness();
    const now = h.clock.now();
    const window = { from: new Date(now).toISOString(), to: new Date(now + 30_000).toISOString() };
    const slot = await h.startWith(monitor('mon_a', { failure_threshold: 1, maintenance_windows: [window] }));
    h.results.push(DOWN, DOWN, DOWN, DOWN, DOWN);
    await h.at(slot);
    expect(h.alerts.map((a) => [a.type, a.maintenance])).to.deep.equal([['monitor.down', true]]);
    const held = h.alerts[0]!.incident_id;
    // Still in the window: nothing more.
    await h.at(slot + 10_000);
    expect(h.alerts).to.have.length(1);
    // Past it, still down: the held incident closes and a new one opens, unmarked.
    let t = slot + 10_000;
    while (t < now + 30_000) t += 10_000;
    await h.at(t);
    expect(h.alerts.map((a) => [a.type, a.incident_id === held, a.maintenance ?? false])).to.deep.equal([
      ['monitor.down', true, true],
      ['monitor.up', true, true],
      ['monitor.down', false, false],
    ]);
    expect(h.alerts[2]!.incident_id).to.equal(checkIdFor('mon_a', t));
    // The held incident's end is dated before the new incident's start.
    expect(Date.parse(h.alerts[1]!.created_at)).to.be.below(Date.parse(h.alerts[2]!.created_at));
    await h.scheduler.stop();
  });

  it('delivers the recovery of an incident that paged before a window, even inside the window', async () => {
    const h = new Harness();
    const now = h.clock.now();
    const slot = await h.startWith(monitor('mon_a', { failure_threshold: 1 }));
    h.results.push(DOWN, UP);
    await h.at(slot);
    expect(h.alerts.map((a) => [a.type, a.maintenance ?? false])).to.deep.equal([['monitor.down', false]]);
    // A window begins; the monitor recovers in it.
    const window = { from: new Date(now).toISOString(), to: new Date(slot + 60_000).toISOString() };
    h.monitors = [monitor('mon_a', { failure_threshold: 1, maintenance_windows: [window] })];
    h.scheduler.reconcile();
    await h.at(slot + 10_000);
    expect(h.alerts.map((a) => [a.type, a.maintenance ?? false])).to.deep.equal([
      ['monitor.down', false],
      ['monitor.up', false],
    ]);
    await h.scheduler.stop();
  });

  it('continues from the loaded state: no second down alert for a monitor already down', async () => {
    const h = new Harness();
    h.states = new Map([['mon_a', { state: 'down', failures: 0, passes: 0, incidentId: 'chk_old' }]]);
    const slot = await h.startWith(monitor('mon_a', { failure_threshold: 1 }));
    h.results.push(DOWN, UP);
    await h.at(slot);
    expect(h.alerts).to.deep.equal([]);
    await h.at(slot + 10_000);
    expect(h.alerts.map((a) => [a.type, a.incident_id])).to.deep.equal([['monitor.up', 'chk_old']]);
    await h.scheduler.stop();
  });

  it('skips a slot whose monitor it no longer owns (ownership lapsed before the group moved it)', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a'));
    h.owned.delete('mon_a');
    await h.at(slot);
    expect(h.probes).to.deep.equal([]);
    h.owned.add('mon_a');
    await h.at(slot + 10_000);
    expect(h.probes.map((p) => p.ctx.checkId)).to.deep.equal([checkIdFor('mon_a', slot + 10_000)]);
    await h.scheduler.stop();
  });

  it('does not publish a result whose monitor was handed over while it ran', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a'));
    let open: () => void = () => undefined;
    h.gate = new Promise((r) => (open = r));
    await h.at(slot);
    expect(h.probes).to.have.length(1);
    h.owned.delete('mon_a');
    h.gate = undefined;
    open();
    await settle();
    expect(h.checks).to.deep.equal([]);
    await h.scheduler.stop();
  });

  it('advances the alert state only for published results, and retries an unpublished alert with the next check', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a'));
    h.results.push(DOWN, DOWN, DOWN, DOWN);
    h.failChecks = 1;
    await h.at(slot);
    await h.at(slot + 10_000);
    expect(h.checks).to.have.length(1);
    expect(h.alerts, 'one published failure is not two').to.deep.equal([]);
    h.failAlerts = 1;
    await h.at(slot + 20_000);
    expect(h.alerts, 'its publish failed').to.deep.equal([]);
    await h.at(slot + 30_000);
    expect(h.alerts.map((a) => a.type)).to.deep.equal(['monitor.down']);
    await h.scheduler.stop();
  });

  it('skips a slot while the previous check of the monitor still runs', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a'));
    let open: () => void = () => undefined;
    h.gate = new Promise((r) => (open = r));
    await h.at(slot + 20_000);
    expect(h.probes, 'one check in flight, two slots skipped').to.have.length(1);
    open();
    await settle();
    expect(h.checks).to.have.length(1);
    h.gate = undefined;
    await h.at(slot + 30_000);
    expect(h.probes).to.have.length(2);
    await h.scheduler.stop();
  });

  it("gives each tenant a fair share of the check slots: one tenant's hung checks never skip another's", async () => {
    const h = new Harness();
    // Tenant A: 30 monitors whose targets never answer (a host that drops SYNs); the
    // runner has 10 check slots. Tenant B: one monitor that answers.
    const hogs = Array.from({ length: 30 }, (_, i) => monitor(`mon_hog_${i}`, { tenant_id: 'ten_a' }));
    const b = monitor('mon_b', { tenant_id: 'ten_b' });
    h.gate = new Promise(() => undefined);
    h.gated = (m) => m.tenant_id === 'ten_a';
    await h.startWith(b, ...hogs);
    await h.clock.advance(30_000);
    const probed = (tenant: string) => h.probes.filter((p) => p.id.startsWith(tenant)).length;
    expect(probed('mon_b'), "B's check ran at each of its three slots").to.equal(3);
    expect(h.checks.filter((c) => c.monitor_id === 'mon_b')).to.have.length(3);
    // A borrowed every slot B cannot use (work-conserving): 10 − B's one.
    expect(probed('mon_hog_'), "A's checks in flight").to.equal(9);
    const skipped = (await h.registry.getSingleMetric('runner_tenant_checks_skipped_total')!.get()).values;
    const byTenant = new Map(skipped.map((v) => [v.labels.tenant, v.value]));
    // Every slot of the 21 monitors that never got a check slot (the 9 running ones skip as overlap).
    expect(byTenant.get('ten_a'), "A's skipped slots").to.equal(21 * 3);
    expect(byTenant.get('ten_b') ?? 0).to.equal(0);
  });

  it(`names at most ${MAX_TENANT_LABELS} tenants in runner_tenant_checks_skipped_total, the rest as _other`, async () => {
    const h = new Harness();
    const many = Array.from({ length: MAX_TENANT_LABELS + 50 }, (_, i) =>
      monitor(`mon_t${i}`, { tenant_id: `ten_${i}` }),
    );
    h.gate = new Promise(() => undefined);
    await h.startWith(...many);
    await h.clock.advance(10_000);
    const values = (await h.registry.getSingleMetric('runner_tenant_checks_skipped_total')!.get()).values;
    const total = values.reduce((n, v) => n + v.value, 0);
    expect(total, 'every slot but the 10 running').to.equal(many.length - 10);
    expect(values).to.have.length(MAX_TENANT_LABELS + 1);
    expect(values.some((v) => v.labels.tenant === '_other')).to.equal(true);
  });

  it('lets a tenant alone use every check slot', async () => {
    const h = new Harness();
    const hogs = Array.from({ length: 30 }, (_, i) => monitor(`mon_hog_${i}`, { tenant_id: 'ten_a' }));
    h.gate = new Promise(() => undefined);
    await h.startWith(...hogs);
    await h.clock.advance(10_000);
    expect(h.probes).to.have.length(10);
    const skipped = (await h.registry.getSingleMetric('runner_checks_skipped_total')!.get()).values;
    expect(skipped.map((v) => [v.labels.reason, v.value])).to.deep.equal([['busy', 20]]);
  });

  it('on stop runs nothing more, lets a check in flight finish within 5 s, then cuts it', async () => {
    const h = new Harness();
    const slot = await h.startWith(monitor('mon_a'));
    h.gate = new Promise(() => undefined); // never answers by itself
    await h.at(slot);
    let stopped = false;
    const stopping = h.scheduler.stop().then(() => (stopped = true));
    await h.clock.advance(4999);
    expect(stopped, 'within the grace time').to.equal(false);
    await h.clock.advance(1);
    await stopping;
    expect(h.probes[0]!.ctx.signal?.aborted).to.equal(true);
    expect(h.scheduler.health()).to.equal(false);
    await h.clock.advance(60_000);
    expect(h.probes).to.have.length(1);
    expect(h.clock.pending).to.equal(0);
  });

  it('starts from unknown when the states cannot be loaded', async () => {
    const h = new Harness();
    const s = new Scheduler({
      monitors: { all: () => [monitor('mon_a', { failure_threshold: 1 })] },
      owns: () => true,
      decides: () => true,
      loadStates: () => Promise.reject(new Error('ClickHouse is away')),
      probe: () => Promise.resolve(UP),
      slotChecks: () => Promise.resolve([]),
      publishCheck: (c) => {
        h.checks.push(c);
        return Promise.resolve();
      },
      publishAlert: (a) => {
        h.alerts.push(a);
        return Promise.resolve();
      },
      logger: silentLogger,
      registry: new Registry(),
      runnerId: 'r1',
      location: 'default',
      maxConcurrentChecks: 10,
      maxBodyBytes: 1024,
      stateSettleMs: SETTLE_MS,
      clock: h.clock,
    });
    await s.start();
    await h.clock.advance(SETTLE_MS + 10_000);
    expect(h.checks).to.have.length(1);
    expect(h.alerts, 'a first up from unknown says nothing').to.deep.equal([]);
    await s.stop();
  });

  describe('several locations', () => {
    const QUORUM = { locations: ['default', 'eu'], failure_threshold: 1, timeout_ms: 2000 };

    it('decides a slot after its slowest check and the settle time, on every location’s stored check, by the quorum', async () => {
      const h = new Harness();
      const slot = await h.startWith(monitor('mon_q', QUORUM));
      h.results.push(DOWN);
      await h.at(slot);
      await settle();
      // (The slot before, checked by nobody here, was decided already.)
      h.slotReads.length = 0;
      // Its own check is published at once; the decision waits for every location's.
      expect(h.checks.map((c) => [c.id, c.status, c.location])).to.deep.equal([
        [checkIdFor('mon_q', slot, 'default'), 'down', 'default'],
      ]);
      await h.at(slot + 2000 + SETTLE_MS - 1);
      expect(h.slotReads).to.deep.equal([]);
      await h.at(slot + 2000 + SETTLE_MS);
      expect(h.slotReads).to.deep.equal([[checkIdFor('mon_q', slot, 'default'), checkIdFor('mon_q', slot, 'eu')]]);
      // 1 of 2 down is below the quorum (2): no incident.
      expect(h.alerts).to.deep.equal([]);
      // Next slot: both down. The incident is named after the first location's check.
      h.results.push(DOWN);
      h.peerStatus = 'down';
      await h.at(slot + 10_000 + 2000 + SETTLE_MS);
      expect(h.alerts.map((a) => [a.type, a.incident_id])).to.deep.equal([
        ['monitor.down', checkIdFor('mon_q', slot + 10_000, 'default')],
      ]);
    });

    it('reads again after the settle time for a missing location, then counts it as not failing', async () => {
      const h = new Harness();
      const slot = await h.startWith(monitor('mon_q', { ...QUORUM, quorum: 2 }));
      h.results.push(DOWN);
      h.peersStored = 0;
      const missing = async (): Promise<number> =>
        (await h.registry.getSingleMetric('runner_location_checks_missing_total')!.get()).values[0]?.value ?? 0;
      await h.at(slot);
      h.slotReads.length = 0;
      const before = await missing();
      await h.at(slot + 2000 + SETTLE_MS);
      await h.at(slot + 2000 + 2 * SETTLE_MS);
      expect(h.slotReads).to.have.length(2);
      expect(h.alerts).to.deep.equal([]);
      expect((await missing()) - before).to.equal(1);
    });

    it('decides a monitor whose locations it does not serve, and only checks one it does not own in the decide group', async () => {
      const h = new Harness();
      const far = monitor('mon_far', { ...QUORUM, locations: ['eu', 'us'] });
      const near = monitor('mon_near', QUORUM);
      h.monitors = [far, near];
      h.owned.add('mon_far').add('mon_near');
      h.decided.add('mon_far');
      h.peerStatus = 'down';
      await h.scheduler.start();
      await h.clock.advance(SETTLE_MS);
      expect(h.scheduler.scheduled()).to.deep.equal(['mon_near']);
      expect(h.scheduler.deciding()).to.deep.equal(['mon_far']);
      const slot = firstUndecidedSlot(far, h.clock.now(), SETTLE_MS);
      await h.at(decisionAt(far, slot, SETTLE_MS));
      // Both of mon_far's locations failed the slot (read from ClickHouse): the incident
      // opens, named after the first location's check, though this runner ran neither.
      expect(h.slotReads[0]).to.deep.equal([checkIdFor('mon_far', slot, 'eu'), checkIdFor('mon_far', slot, 'us')]);
      expect(h.alerts.map((a) => [a.monitor_id, a.type, a.incident_id])).to.deep.equal([
        ['mon_far', 'monitor.down', checkIdFor('mon_far', slot, 'eu')],
      ]);
      // mon_near is checked here (and published) but decided elsewhere: never read, never alerted.
      await h.clock.advance(30_000);
      expect(h.checks.filter((c) => c.monitor_id === 'mon_near').length).to.be.greaterThan(1);
      expect(h.probes.every((p) => p.id === 'mon_near')).to.equal(true);
      expect(h.slotReads.flat().some((id) => id.startsWith('mon_near'))).to.equal(false);
      expect(h.alerts.filter((a) => a.monitor_id === 'mon_near')).to.deep.equal([]);
      expect((await h.registry.getSingleMetricAsString('runner_monitors_decided')).trim()).to.match(/ 1$/);
    });

    it('hands a decision over: the old decider publishes nothing once its partition goes; the new one starts from the last alert', async () => {
      const far = monitor('mon_far', { ...QUORUM, locations: ['eu', 'us'] });
      const old = new Harness();
      old.monitors = [far];
      old.decided.add('mon_far');
      old.peerStatus = 'down';
      old.peersStored = 1;
      await old.scheduler.start();
      await old.clock.advance(SETTLE_MS);
      const slot = firstUndecidedSlot(far, old.clock.now(), SETTLE_MS);
      // The decision reads one location's check, waits the settle time for the other...
      await old.at(decisionAt(far, slot, SETTLE_MS));
      expect(old.slotReads).to.have.length(1);
      // ...and meanwhile the group takes the partition away (a rebalance): nothing is published.
      old.decided.clear();
      await old.clock.advance(SETTLE_MS);
      expect(old.slotReads).to.have.length(2);
      expect(old.alerts).to.deep.equal([]);
      old.scheduler.reconcile();
      expect(old.scheduler.deciding()).to.deep.equal([]);
      await old.clock.advance(60_000);
      expect(old.slotReads).to.have.length(2);

      // The new owner (another runner, any location) loads the monitor's last alert after
      // the settle time: the monitor is already down, so failing slots open nothing again.
      const next = new Harness();
      next.monitors = [far];
      next.decided.add('mon_far');
      next.peerStatus = 'down';
      next.states = new Map([['mon_far', { state: 'down', failures: 0, passes: 0, incidentId: 'chk_earlier' }]]);
      await next.clock.advance(old.clock.now() - next.clock.now());
      await next.scheduler.start();
      await next.clock.advance(SETTLE_MS - 1);
      expect(next.stateLoads).to.deep.equal([]);
      await next.clock.advance(1);
      expect(next.stateLoads).to.deep.equal([['mon_far']]);
      const first = firstUndecidedSlot(far, next.clock.now(), SETTLE_MS);
      expect(decisionAt(far, first, SETTLE_MS)).to.be.greaterThan(next.clock.now());
      await next.at(decisionAt(far, first, SETTLE_MS) + 30_000);
      expect(next.slotReads.length).to.be.greaterThan(2);
      expect(next.alerts).to.deep.equal([]);
      // Passing slots resolve the incident it loaded.
      next.peerStatus = 'up';
      await next.clock.advance(20_000);
      expect(next.alerts.map((a) => [a.type, a.incident_id])).to.deep.equal([['monitor.up', 'chk_earlier']]);
    });

    it('publishes the same alert whichever runner decides the slot: a change decided twice is stored once', async () => {
      const far = monitor('mon_far', { ...QUORUM, locations: ['eu', 'us', 'ap'] });
      const made: AlertMessage[][] = [];
      // A runner of the first location, and one of a location the monitor does not list.
      for (const location of ['eu', 'default']) {
        const h = new Harness(location);
        h.monitors = [far];
        h.decided.add('mon_far');
        h.peerStatus = 'down';
        h.peersStored = 2;
        await h.scheduler.start();
        await h.clock.advance(SETTLE_MS);
        const slot = firstUndecidedSlot(far, h.clock.now(), SETTLE_MS);
        await h.at(decisionAt(far, slot, SETTLE_MS) + SETTLE_MS);
        expect(h.alerts, location).to.have.length(1);
        made.push(h.alerts);
      }
      const [a, b] = made.map((alerts) => alerts.map(({ created_at: _at, ...rest }) => rest));
      expect(a).to.deep.equal(b);
    });

    it('does not decide a slot no location stored a check of: the state holds', async () => {
      const h = new Harness();
      const far = monitor('mon_far', { ...QUORUM, locations: ['eu', 'us'] });
      h.monitors = [far];
      h.decided.add('mon_far');
      h.peersStored = 0;
      h.states = new Map([['mon_far', { state: 'down', failures: 0, passes: 0, incidentId: 'chk_open' }]]);
      await h.scheduler.start();
      await h.clock.advance(SETTLE_MS + 60_000);
      expect(h.slotReads.length).to.be.greaterThan(4);
      // Nothing read is not "up": the open incident stays open.
      expect(h.alerts).to.deep.equal([]);
    });

    it('hands a monitor left with one location back to its checker, which starts from the last alert', async () => {
      const h = new Harness();
      await h.startWith(monitor('mon_q', QUORUM));
      expect(h.scheduler.deciding()).to.deep.equal(['mon_q']);
      // The checker and the decider each loaded it.
      expect(h.stateLoads).to.have.length(2);
      h.monitors = [monitor('mon_q', { ...QUORUM, locations: ['default'], version: 2 })];
      h.scheduler.reconcile();
      expect(h.scheduler.deciding()).to.deep.equal([]);
      await h.clock.advance(SETTLE_MS);
      expect(h.stateLoads).to.have.length(3);
    });
  });
});

describe('who decides a monitor of several locations (unit)', () => {
  const m = (over: Partial<StoredMonitor> = {}): StoredMonitor =>
    monitor('mon_x', { locations: ['eu', 'us'], timeout_ms: 2000, ...over });

  it('is the owner of its partition in the decide group, whatever its location; one location: its checker', () => {
    const owns = new Set(['mon_x']);
    const inGroup = (id: string): boolean => owns.has(id);
    expect(decidesHere(m(), inGroup)).to.equal(true);
    expect(decidesHere(m(), () => false)).to.equal(false);
    expect(decidesHere(m({ paused: true }), inGroup), 'paused').to.equal(false);
    expect(decidesHere(m({ locations: ['eu'] }), inGroup), 'one location').to.equal(false);
    expect(decidedByChecker(m({ locations: ['eu'] }))).to.equal(true);
    expect(decidedByChecker(m())).to.equal(false);
  });

  it('names a decide group no location group can have (locations have no dots)', () => {
    const name = decideGroupId('runners');
    expect(name).to.equal('runners.all.decide');
    const location = new RegExp(LOCATION_PATTERN);
    // A location's group is `runners.<location>` and its others `runners.<location>.<suffix>`.
    const [, middle, suffix] = name.split('.');
    expect(location.test(`${middle}.${suffix}`)).to.equal(false);
    expect(['browser', 'run']).to.not.include(suffix);
  });

  it('starts a new decider at the first slot whose decision time is still ahead, never one already taken', () => {
    const mon = m({ interval_seconds: 10 });
    const now = 5_000_000;
    const first = firstUndecidedSlot(mon, now, SETTLE_MS);
    expect(decisionAt(mon, first, SETTLE_MS)).to.be.greaterThan(now);
    expect(decisionAt(mon, first - 10_000, SETTLE_MS)).to.be.at.most(now);
    expect(firstUndecidedSlot(mon, now, SETTLE_MS, first)).to.equal(first + 10_000);
    // With confirmation, the slowest check is confirm_delay_ms + 2 × timeout_ms.
    expect(decisionAt(m({ confirm_delay_ms: 500 }), 0, SETTLE_MS)).to.equal(500 + 4000 + SETTLE_MS);
  });
});
