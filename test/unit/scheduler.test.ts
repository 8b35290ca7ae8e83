import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { AlertMessage, CheckMessage } from '@telemetry/contract';
import { DEFAULT_MONITOR, type StoredMonitor } from '@telemetry/store';
import { alertIdFor } from '../../services/check-runner/src/alerts.js';
import { MAX_TENANT_LABELS } from '../../services/check-runner/src/metrics.js';
import type { ProbeContext, ProbeResult } from '../../services/check-runner/src/probes/index.js';
import { Scheduler } from '../../services/check-runner/src/scheduler.js';
import { checkIdFor, nextSlot } from '../../services/check-runner/src/slots.js';
import type { AlertState } from '../../services/check-runner/src/state.js';
import { FakeClock, settle, silentLogger } from './support/fakes.js';

const SETTLE_MS = 1000;

function monitor(id: string, over: Partial<StoredMonitor> = {}): StoredMonitor {
  return {
    ...DEFAULT_MONITOR,
    tenant_id: 'ten_a',
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

  constructor() {
    this.scheduler = new Scheduler({
      monitors: { all: () => this.monitors },
      owns: (id) => this.owned.has(id),
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
        const stored = ids.slice(0, this.peersStored).map((id) => ({
          id,
          monitor_id: m.id,
          tenant_id: m.tenant_id,
          status: this.peerStatus,
          response_time: 4,
          status_code: this.peerStatus === 'down' ? 500 : 200,
          location: 'eu',
          created_at: new Date(this.clock.now()).toISOString(),
        }));
        return Promise.resolve(stored);
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
      location: 'default',
      maxConcurrentChecks: 10,
      maxBodyBytes: 1024,
      stateSettleMs: SETTLE_MS,
      clock: this.clock,
    });
  }

  /** Starts with `m` owned and waits until its state is loaded; returns its first slot. */
  async startWith(...ms: StoredMonitor[]): Promise<number> {
    this.monitors = ms;
    for (const m of ms) this.owned.add(m.id);
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

    it('decides a slot after its slowest check and the settle time, on every location’s check, by the quorum', async () => {
      const h = new Harness();
      const slot = await h.startWith(monitor('mon_q', QUORUM));
      h.results.push(DOWN);
      await h.at(slot);
      await settle();
      // Its own check is published at once; the decision waits for the other location's.
      expect(h.checks.map((c) => [c.id, c.status, c.location])).to.deep.equal([
        [checkIdFor('mon_q', slot, 'default'), 'down', 'default'],
      ]);
      await h.at(slot + 2000 + SETTLE_MS - 1);
      expect(h.slotReads).to.deep.equal([]);
      await h.at(slot + 2000 + SETTLE_MS);
      expect(h.slotReads).to.deep.equal([[checkIdFor('mon_q', slot, 'eu')]]);
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
      await h.at(slot + 2000 + SETTLE_MS);
      await h.at(slot + 2000 + 2 * SETTLE_MS);
      expect(h.slotReads).to.have.length(2);
      expect(h.alerts).to.deep.equal([]);
    });

    it('leaves deciding to the first location, and loads the state again when it becomes the decider', async () => {
      const h = new Harness();
      const slot = await h.startWith(monitor('mon_q', { ...QUORUM, locations: ['eu', 'default'] }));
      h.results.push(DOWN);
      h.peerStatus = 'down';
      await h.at(slot + 2000 + SETTLE_MS);
      // It checks (and publishes) but does not decide: no read, no alert.
      expect(h.checks).to.have.length(1);
      expect([h.slotReads, h.alerts]).to.deep.equal([[], []]);
      expect(h.stateLoads).to.have.length(1);
      // The locations are reordered: it decides now, from the monitor's last alert.
      h.monitors = [monitor('mon_q', { ...QUORUM, version: 2 })];
      h.scheduler.reconcile();
      await h.clock.advance(SETTLE_MS);
      expect(h.stateLoads).to.have.length(2);
    });
  });
});
