import { expect } from 'chai';
import { createTenant, DEFAULT_MONITOR, MonitorStore, placeholderMonitor, type StoredMonitor } from '@telemetry/store';
import { runSecretBox } from '../../harness/processes.js';
import { phaseOf } from '../../services/check-runner/src/scheduler.js';
import { blackHolePort } from '../support/black-hole.js';
import { adminClickHouse, eventually, uid, adminRegistry, runRunner, type Running } from '../support/fixtures.js';
import { TestTarget } from '../support/target.js';

const SLOTS = 20;
const HOGS = 200;
const B_INTERVAL_MS = 2000;

/** A labelled counter of the runner's /metrics, by the value of its first label. */
async function counterBy(runner: Running, name: string, label: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${runner.url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const [, value, n] of text.matchAll(new RegExp(`^${name}\\{${label}="([^"]+)"[^}]*\\} (\\S+)$`, 'gm'))) {
    out.set(value!, Number(n));
  }
  return out;
}

const skippedByTenant = (r: Running) => counterBy(r, 'runner_tenant_checks_skipped_total', 'tenant');

/** Slots skipped for want of a check slot (busy: all in use; tenant_share: kept for others). */
async function skippedForSlots(r: Running): Promise<number> {
  const by = await counterBy(r, 'runner_checks_skipped_total', 'reason');
  return (by.get('busy') ?? 0) + (by.get('tenant_share') ?? 0);
}

/**
 * Fair check slots on the real pipeline: one tenant's TCP monitors aimed at a port that
 * drops SYNs hold far more checks than the runner has slots (MAX_CONCURRENT_CHECKS), and
 * another tenant's monitor is still checked at every one of its slots, on time.
 */
describe('fair check slots among tenants (real Kafka and ClickHouse, a check runner)', function () {
  this.timeout(180_000);
  let runner: Running | undefined;
  let hole: Awaited<ReturnType<typeof blackHolePort>> | undefined;
  const target = new TestTarget();

  before(async () => {
    hole = await blackHolePort();
    await target.start();
    runner = await runRunner({
      RUNNER_ID: 'fair',
      RUNNER_GROUP_ID: uid('fair-runners'),
      WEBHOOK_GROUP_ID: uid('fair-webhooks'),
      MAX_CONCURRENT_CHECKS: String(SLOTS),
    });
  });
  after(async () => {
    await runner?.stop();
    await target.stop();
    await hole?.close();
  });

  it(`checks tenant B on time while tenant A's ${HOGS} hung TCP checks want ${SLOTS}× more slots`, async () => {
    const ch = adminClickHouse();
    const store = new MonitorStore(adminRegistry(), runSecretBox());
    const a = (await createTenant(adminRegistry(), uid('hogging tenant'))).tenant_id;
    const b = (await createTenant(adminRegistry(), uid('small tenant'))).tenant_id;
    const bId = uid('mon_fair_b');
    const monitors: Omit<StoredMonitor, 'version'>[] = [
      ...Array.from({ length: HOGS }, (_, i) => ({
        ...placeholderMonitor(uid(`mon_hog_${i}`), `hog ${i}`, a),
        ...DEFAULT_MONITOR,
        type: 'tcp' as const,
        url: `tcp://127.0.0.1:${hole!.port}`,
        method: 'GET' as const,
        interval_seconds: 5,
        timeout_ms: 4500,
      })),
      {
        ...placeholderMonitor(bId, 'small', b),
        ...DEFAULT_MONITOR,
        url: target.url(`/${bId}`),
        interval_seconds: B_INTERVAL_MS / 1000,
        timeout_ms: 1000,
      },
    ];
    let versions: number[] = [];
    try {
      versions = await store.saveMany(monitors);
      // The slots are all wanted: checks are being skipped for want of one.
      await eventually(
        'checks skipped for want of a slot',
        async () => ((await skippedForSlots(runner!)) > HOGS ? true : undefined),
        60_000,
      );
      const from = Date.now();
      const skippedBefore = await skippedByTenant(runner!);
      // Eight slots of B's in a row, each checked within a second of the slot.
      const seen = await eventually(
        "B's next eight checks",
        () => {
          const r = target.requests(`/${bId}`).filter((x) => x.at > from);
          return r.length >= 8 ? r : undefined;
        },
        60_000,
      );
      const phase = phaseOf(bId, B_INTERVAL_MS);
      const slotOf = (at: number) => Math.floor((at - phase) / B_INTERVAL_MS) * B_INTERVAL_MS + phase;
      const slots = seen.map((r) => slotOf(r.at));
      const late = seen.map((r) => r.at - slotOf(r.at));
      expect(
        late.every((ms) => ms < 1000),
        `lateness ${late.join(', ')} ms`,
      ).to.equal(true);
      // No slot of B's missed between the first and the last.
      expect(slots.slice(1).map((s, i) => s - slots[i]!)).to.deep.equal(Array(slots.length - 1).fill(B_INTERVAL_MS));
      const skippedAfter = await skippedByTenant(runner!);
      expect(skippedAfter.get(b) ?? 0, "B's skipped slots").to.equal(0);
      expect(skippedAfter.get(a) ?? 0, "A's slots skipped meanwhile").to.be.above(skippedBefore.get(a) ?? 0);
    } finally {
      // Deleted again, so that the rest of the suite does not check them.
      if (versions.length > 0) await store.saveMany(monitors, true);
      await ch.close();
    }
  });
});
