import { expect } from 'chai';
import type { CheckMessage, CheckStatus } from '@telemetry/contract';
import { DEFAULT_MONITOR } from '@telemetry/store';
import { alertIdFor } from '../../services/check-runner/src/alerts.js';
import { decisionAt } from '../../services/check-runner/src/decision.js';
import { INITIAL_STATE, type AlertState } from '../../services/check-runner/src/state.js';
import { transition, type TransitionMonitor } from '../../services/check-runner/src/transition.js';

const NOW = Date.parse('2026-11-23T12:00:30Z');
const WINDOW = { from: '2026-11-23T10:00:00Z', to: '2026-11-23T11:00:00Z' };
const IN_WINDOW = new Date('2026-11-23T10:30:00Z');
const AFTER_WINDOW = new Date('2026-11-23T11:30:00Z');

const monitor: TransitionMonitor = {
  id: 'mon_t',
  tenant_id: 'ten_a',
  name: 'shop',
  url: 'https://user:pw@shop.test/health?token=abc',
  failure_threshold: 2,
  recovery_threshold: 2,
  maintenance_windows: [WINDOW],
};

function check(id: string, status: CheckStatus): CheckMessage {
  return {
    id,
    monitor_id: monitor.id,
    tenant_id: monitor.tenant_id,
    status,
    response_time: 7,
    status_code: status === 'down' ? 503 : 200,
    ...(status === 'down' ? { error: 'unexpected_status' as const } : {}),
    location: 'default',
    created_at: '2026-11-23T10:29:59.000Z',
  };
}

/** Each alert as type@incident, [m] when marked maintenance, and how long before NOW it is dated. */
function summary(state: AlertState, c: CheckMessage, startedAt = AFTER_WINDOW) {
  const { next, alerts } = transition(state, c, monitor, { startedAt, now: NOW });
  const out = alerts.map(
    (a) => `${a.type}@${a.incident_id}${a.maintenance ? '[m]' : ''}-${NOW - Date.parse(a.created_at)}ms`,
  );
  return { next, out };
}

const DOWN_ONCE: AlertState = { state: 'up', failures: 1, passes: 0, streakStart: 'c1' };
const DOWN: AlertState = { state: 'down', failures: 2, passes: 0, streakStart: 'c1', incidentId: 'c1', held: false };
const HELD: AlertState = { ...DOWN, held: true };
const RECOVERING: AlertState = { ...DOWN, failures: 0, passes: 1, streakStart: undefined };

describe('state transition with maintenance windows (unit, pure)', () => {
  const cases: {
    name: string;
    from: AlertState;
    check: CheckMessage;
    at?: Date;
    alerts: string[];
    next: Partial<AlertState>;
  }[] = [
    {
      name: 'a first passing check: up, no alert',
      from: INITIAL_STATE,
      check: check('c0', 'up'),
      alerts: [],
      next: { state: 'up' },
    },
    {
      name: 'degraded counts as passing',
      from: INITIAL_STATE,
      check: check('c0', 'degraded'),
      alerts: [],
      next: { state: 'up' },
    },
    {
      name: 'one failure below failure_threshold: no alert',
      from: { state: 'up', failures: 0, passes: 3 },
      check: check('c1', 'down'),
      alerts: [],
      next: { state: 'up', failures: 1, streakStart: 'c1' },
    },
    {
      name: 'down after failure_threshold failures, the incident named after the first',
      from: DOWN_ONCE,
      check: check('c2', 'down'),
      alerts: ['monitor.down@c1-0ms'],
      next: { state: 'down', incidentId: 'c1', held: false },
    },
    {
      name: 'down within a window: published marked, and held',
      from: DOWN_ONCE,
      check: check('c2', 'down'),
      at: IN_WINDOW,
      alerts: ['monitor.down@c1[m]-0ms'],
      next: { state: 'down', incidentId: 'c1', held: true },
    },
    {
      name: 'still down, not held: nothing more',
      from: DOWN,
      check: check('c3', 'down'),
      alerts: [],
      next: { state: 'down', incidentId: 'c1', failures: 3 },
    },
    {
      name: 'still down and held inside the window: nothing more',
      from: HELD,
      check: check('c3', 'down'),
      at: IN_WINDOW,
      alerts: [],
      next: { state: 'down', incidentId: 'c1', held: true },
    },
    {
      name: 'held and still down after the window: the held incident closes (a second earlier) and a new one pages',
      from: HELD,
      check: check('c3', 'down'),
      alerts: ['monitor.up@c1[m]-1000ms', 'monitor.down@c3-0ms'],
      next: { state: 'down', incidentId: 'c3', streakStart: 'c3', held: false },
    },
    {
      name: 'one pass below recovery_threshold: no alert',
      from: DOWN,
      check: check('c3', 'up'),
      alerts: [],
      next: { state: 'down', passes: 1 },
    },
    {
      name: 'up after recovery_threshold passes',
      from: RECOVERING,
      check: check('c4', 'up'),
      alerts: ['monitor.up@c1-0ms'],
      next: { state: 'up', failures: 0, passes: 2 },
    },
    {
      name: 'the up of a paging incident pages, even within a window',
      from: RECOVERING,
      check: check('c4', 'up'),
      at: IN_WINDOW,
      alerts: ['monitor.up@c1-0ms'],
      next: { state: 'up' },
    },
    {
      name: 'the up of a held incident is held, even after the window',
      from: { ...RECOVERING, held: true },
      check: check('c4', 'up'),
      alerts: ['monitor.up@c1[m]-0ms'],
      next: { state: 'up' },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const { next, out } = summary(c.from, c.check, c.at);
      expect(out).to.deep.equal(c.alerts);
      expect(next).to.include(c.next);
    });
  }

  it('leaves its input state as it was (the caller keeps it when an alert is not published)', () => {
    const from = { ...HELD };
    transition(from, check('c3', 'down'), monitor, { startedAt: AFTER_WINDOW, now: NOW });
    expect(from).to.deep.equal(HELD);
  });

  it('builds the alert: a stable id, the check, the monitor with its URL masked', () => {
    const { alerts } = transition(DOWN_ONCE, check('c2', 'down'), monitor, { startedAt: AFTER_WINDOW, now: NOW });
    expect(alerts).to.deep.equal([
      {
        id: alertIdFor('mon_t', { type: 'monitor.down', incidentId: 'c1' }),
        type: 'monitor.down',
        monitor_id: 'mon_t',
        tenant_id: 'ten_a',
        incident_id: 'c1',
        created_at: new Date(NOW).toISOString(),
        check: {
          id: 'c2',
          status: 'down',
          response_time: 7,
          status_code: 503,
          error: 'unexpected_status',
          created_at: '2026-11-23T10:29:59.000Z',
        },
        monitor: { name: 'shop', url: 'https://shop.test/health?token=****' },
      },
    ]);
  });
});

describe('multi-location decision time (unit)', () => {
  it('waits for the slowest possible check of the slot, then the settle time', () => {
    const m = { ...DEFAULT_MONITOR, timeout_ms: 5000, confirm_delay_ms: 0 };
    expect(decisionAt(m, 1_000_000, 1000)).to.equal(1_000_000 + 5000 + 1000);
    // A confirmation: its delay and a second timeout.
    expect(decisionAt({ ...m, confirm_delay_ms: 2000 }, 1_000_000, 1000)).to.equal(1_000_000 + 2000 + 10_000 + 1000);
  });
});
