import { expect } from 'chai';
import { createLogger, LineCollector, ServiceRunner, type Component } from '@telemetry/platform';

class Part implements Component {
  stops = 0;
  healthy = true;
  constructor(
    readonly name: string,
    private readonly log: string[],
    private readonly behaviour: { stop?: () => Promise<void>; start?: () => Promise<void> } = {},
    readonly essential?: boolean,
  ) {}
  async start(): Promise<void> {
    await this.behaviour.start?.();
    this.log.push(`start ${this.name}`);
  }
  async stop(): Promise<void> {
    this.stops++;
    this.log.push(`stop ${this.name}`);
    await this.behaviour.stop?.();
  }
  health(): boolean {
    return this.healthy;
  }
}

function runner(timeoutMs = 25_000): { runner: ServiceRunner; lines: LineCollector } {
  const lines = new LineCollector();
  const logger = createLogger({ service: 'test', level: 'info', stream: lines });
  return { runner: new ServiceRunner(logger, timeoutMs), lines };
}

describe('service runner (unit)', () => {
  it('starts in order and stops in the reverse order', async () => {
    const log: string[] = [];
    const { runner: r } = runner();
    r.use(new Part('http', log), new Part('producer', log)).use(new Part('consumer', log));
    await r.start();
    await r.stop();
    expect(log).to.deep.equal([
      'start http',
      'start producer',
      'start consumer',
      'stop consumer',
      'stop producer',
      'stop http',
    ]);
  });

  it('stops once however often it is asked, and fails readiness from the first request', async () => {
    const log: string[] = [];
    const { runner: r } = runner();
    const a = new Part('a', log);
    const b = new Part('b', log);
    r.use(a, b);
    await r.start();
    expect(r.ready()).to.equal(true);
    const first = r.stop();
    const second = r.stop();
    expect(second).to.equal(first);
    expect(r.ready()).to.equal(false);
    await Promise.all([first, second, r.stop()]);
    expect([a.stops, b.stops]).to.deep.equal([1, 1]);
  });

  it('stops only what started when a start failed', async () => {
    const log: string[] = [];
    const { runner: r } = runner();
    r.use(
      new Part('a', log),
      new Part('b', log, { start: () => Promise.reject(new Error('no broker')) }),
      new Part('c', log),
    );
    let failed = false;
    await r.start().catch(() => (failed = true));
    expect(failed).to.equal(true);
    await r.stop();
    expect(log).to.deep.equal(['start a', 'stop a']);
  });

  it('goes on stopping the others when one fails to stop', async () => {
    const log: string[] = [];
    const { runner: r, lines } = runner();
    r.use(new Part('a', log), new Part('b', log, { stop: () => Promise.reject(new Error('stuck')) }));
    await r.start();
    await r.stop();
    expect(log).to.deep.equal(['start a', 'start b', 'stop b', 'stop a']);
    expect(lines.lines.some((l) => l.includes('component failed to stop') && l.includes('"component":"b"'))).to.equal(
      true,
    );
  });

  it('gives up at the shutdown deadline instead of waiting for a part that never stops', async () => {
    const log: string[] = [];
    const { runner: r, lines } = runner(50);
    const never = new Promise<void>(() => undefined);
    r.use(new Part('a', log), new Part('hung', log, { stop: () => never }));
    await r.start();
    const began = Date.now();
    await r.stop();
    expect(Date.now() - began).to.be.lessThan(5000);
    expect(
      lines.lines.some((l) => l.includes('shutdown deadline passed') && l.includes('"component":"hung"')),
    ).to.equal(true);
    // What comes after the hung part in the shutdown order is left to the process exit.
    expect(log).to.deep.equal(['start a', 'start hung', 'stop hung']);
  });

  it('is ready while every essential part is healthy', async () => {
    const log: string[] = [];
    const { runner: r } = runner();
    const core = new Part('core', log);
    const cache = new Part('cache', log, {}, false);
    r.use(core, cache);
    await r.start();
    cache.healthy = false;
    expect(r.ready(), 'a non-essential part does not fail readiness').to.equal(true);
    expect(r.health()).to.deep.equal({ core: true, cache: false });
    core.healthy = false;
    expect(r.ready()).to.equal(false);
    await r.stop();
  });
});
