import type { Mailer, Notification } from '@telemetry/alerting';
import type { StateAlert } from '@telemetry/contract';
import {
  createLogger,
  LineCollector,
  type Clock,
  type CommittableOffset,
  type GroupBatch,
  type StreamMessage,
  type GroupConsumer,
  type GroupConsumerFactory,
  type GroupConsumerSpec,
  type Logger,
} from '@telemetry/platform';

export const silentLogger: Logger = createLogger({ service: 'test', level: 'silent' });

/** Lets every promise continuation queued so far (and those they queue) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Polls `condition` until it holds, failing after `timeoutMs`. */
export async function until(condition: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/** A clock whose time moves only when the test says so; due timers fire in time order. */
export class FakeClock implements Clock {
  private readonly timers = new Map<object, FakeTimer>();
  private seq = 0;

  constructor(private time = 1_000_000) {}

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): object {
    const handle = {};
    this.timers.set(handle, { at: this.time + Math.max(0, ms), seq: this.seq++, fn });
    return handle;
  }

  clearTimeout(timer: object | undefined): void {
    if (timer) this.timers.delete(timer);
  }

  /** Timers not yet fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing each due timer at its time and letting its promises settle. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await settle();
      let next: [object, FakeTimer] | undefined;
      for (const entry of this.timers) {
        if (entry[1].at > end) continue;
        if (!next || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].seq < next[1].seq)) {
          next = entry;
        }
      }
      if (!next) break;
      this.timers.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
    }
    this.time = end;
    await settle();
  }
}

/** A group consumer that records what its user asks of it; the test drives the callbacks. */
export class FakeGroupConsumer implements GroupConsumer {
  readonly name: string;
  readonly calls: string[] = [];
  readonly commits: CommittableOffset[][] = [];
  /** Set to make the next commits fail. */
  commitError: Error | undefined;
  healthy = true;
  joined = false;

  constructor(readonly spec: GroupConsumerSpec) {
    this.name = spec.name;
  }

  start(): Promise<void> {
    this.calls.push('start');
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.calls.push('stop');
    this.joined = false;
    return Promise.resolve();
  }

  health(): boolean {
    return this.healthy;
  }

  pause(): void {
    this.calls.push('pause');
  }

  commitOffsets(offsets: CommittableOffset[]): Promise<void> {
    this.calls.push('commit');
    if (this.commitError) return Promise.reject(this.commitError);
    this.commits.push(offsets.map((o) => ({ ...o })));
    return Promise.resolve();
  }

  /** kafkajs's GROUP_JOIN. */
  assign(assignment: Record<string, number[]>): void {
    this.joined = true;
    this.spec.onAssigned?.(assignment);
  }

  /** Hands a batch to an eachBatch user. */
  batch(b: GroupBatch): Promise<void> {
    if (!('eachBatch' in this.spec)) throw new Error('not an eachBatch consumer');
    return this.spec.eachBatch(b);
  }

  /** Hands one message to an eachMessage user. */
  message(topic: string, partition: number, value: string | null, offset = '0'): Promise<void> {
    if (!('eachMessage' in this.spec)) throw new Error('not an eachMessage consumer');
    return this.spec.eachMessage({
      topic,
      partition,
      message: kafkaMessage(value, offset),
      heartbeat: () => Promise.resolve(),
    });
  }
}

/** A factory that keeps every consumer it built. */
export function fakeGroupConsumers(): { factory: GroupConsumerFactory; built: FakeGroupConsumer[] } {
  const built: FakeGroupConsumer[] = [];
  return {
    built,
    factory: (spec) => {
      const c = new FakeGroupConsumer(spec);
      built.push(c);
      return c;
    },
  };
}

export function kafkaMessage(value: string | null, offset: string): StreamMessage {
  return {
    key: null,
    value: value === null ? null : Buffer.from(value),
    offset,
    timestamp: '0',
    headers: {},
  };
}

/** A batch as kafkajs hands it over, with what the user resolved. */
export interface FakeBatch extends GroupBatch {
  resolved: string[];
  stale: boolean;
}

export function fakeBatch(topic: string, partition: number, firstOffset: number, values: (string | null)[]): FakeBatch {
  const messages = values.map((v, i) => kafkaMessage(v, String(firstOffset + i)));
  const b: FakeBatch = {
    batch: {
      topic,
      partition,
      messages,
      lastOffset: () => messages[messages.length - 1]?.offset ?? String(firstOffset - 1),
      offsetLag: () => '0',
    },
    resolved: [],
    stale: false,
    resolveOffset: (o) => void b.resolved.push(o),
    heartbeat: () => Promise.resolve(),
    isRunning: () => true,
    isStale: () => b.stale,
  };
  return b;
}

/** A logger whose JSON lines the test reads back. */
export class LineLogger {
  private readonly lines = new LineCollector();
  readonly logger: Logger = createLogger({ service: 'test', level: 'debug', stream: this.lines });
  entries(): Record<string, unknown>[] {
    return this.lines.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  }
}

/** An alert as the check runner publishes it (a monitor down, its check refused). */
export const sampleAlert: StateAlert = {
  id: 'alr_000000000000000000000001',
  type: 'monitor.down',
  monitor_id: 'mon_a',
  incident_id: 'chk_1',
  created_at: '2026-11-22T10:00:00.000Z',
  check: {
    id: 'chk_1',
    status: 'down',
    response_time: 3,
    status_code: 0,
    error: 'connection_refused',
    created_at: '2026-11-22T10:00:00Z',
  },
  monitor: { name: 'a', url: 'http://a.test/' },
};

/** A mailer that sends nothing (channels under test that never mail). */
export const noMail: Mailer = {
  send: () => Promise.resolve({ statusCode: 0, error: 'network', detail: 'no mail in this test' }),
};

/** A one-alert notification of `alert`, on attempt `attempt`. */
export function notify(alert: StateAlert, attempt = 1): Notification {
  const kind = alert.type === 'monitor.up' ? 'up' : 'down';
  return { id: alert.id, kind, items: [{ kind, alert, monitorLink: '' }], attempt };
}
