import { expect } from 'chai';
import type { ProducerMessage } from '@telemetry/platform';
import { Registry } from 'prom-client';
import { BatchingPublisher, messageBytes, OverloadedError, type Publisher } from '@telemetry/platform';
import { settle, until } from './support/fakes.js';

/** A publisher whose sends the test acknowledges (or fails) one by one. */
class ControlledTarget implements Publisher {
  readonly sends: { topic: string; messages: ProducerMessage[]; ack(): void; fail(err: Error): void }[] = [];
  send(topic: string, messages: ProducerMessage[]): Promise<void> {
    return new Promise((ack, fail) => this.sends.push({ topic, messages, ack, fail }));
  }
}

function publisher(target: Publisher, lingerMs: number, maxBatchMessages = 100, maxInFlightMessages = 1000) {
  return new BatchingPublisher(target, {
    lingerMs,
    maxBatchMessages,
    maxInFlightMessages,
    registry: new Registry(),
    inFlightMetric: { name: 'test_inflight_messages', help: 'test' },
  });
}

const msg = (v: string): ProducerMessage => ({ value: v });

/** Records when a promise settles, and how. */
function watch(p: Promise<void>): { state: 'pending' | 'resolved' | 'rejected'; err?: unknown } {
  const w: { state: 'pending' | 'resolved' | 'rejected'; err?: unknown } = { state: 'pending' };
  p.then(
    () => (w.state = 'resolved'),
    (err: unknown) => {
      w.state = 'rejected';
      w.err = err;
    },
  );
  return w;
}

describe('batching publisher (unit)', () => {
  it('gathers the sends of one linger window into one request per topic', async () => {
    const target = new ControlledTarget();
    const p = publisher(target, 20);
    const a = watch(p.send('checks', [msg('a')]));
    const b = watch(p.send('checks', [msg('b'), msg('c')]));
    const c = watch(p.send('alerts', [msg('x')]));
    expect(target.sends, 'nothing sent before the window ends').to.deep.equal([]);
    await until(() => target.sends.length === 2, 'both topics sent');
    const checks = target.sends.find((s) => s.topic === 'checks')!;
    expect(checks.messages.map((m) => m.value)).to.deep.equal(['a', 'b', 'c']);
    expect(target.sends.find((s) => s.topic === 'alerts')!.messages.map((m) => m.value)).to.deep.equal(['x']);
    await settle();
    expect([a.state, b.state, c.state], 'nobody answered before the ack').to.deep.equal([
      'pending',
      'pending',
      'pending',
    ]);
    checks.ack();
    await settle();
    expect([a.state, b.state, c.state], 'each caller settles with its own batch').to.deep.equal([
      'resolved',
      'resolved',
      'pending',
    ]);
  });

  it('sends at once when a batch is full, without waiting for the window', () => {
    const target = new ControlledTarget();
    const p = publisher(target, 60_000, 3);
    void p.send('t', [msg('1'), msg('2')]).catch(() => undefined);
    expect(target.sends).to.have.length(0);
    void p.send('t', [msg('3')]).catch(() => undefined);
    expect(target.sends).to.have.length(1);
    expect(target.sends[0]!.messages).to.have.length(3);
    target.sends[0]!.ack();
  });

  it('sends every call on its own with lingerMs 0', () => {
    const target = new ControlledTarget();
    const p = publisher(target, 0);
    void p.send('t', [msg('1')]);
    void p.send('t', [msg('2')]);
    expect(target.sends.map((s) => s.messages.length)).to.deep.equal([1, 1]);
    for (const s of target.sends) s.ack();
  });

  it('fails every caller of a failed batch with its error, and only them', async () => {
    const target = new ControlledTarget();
    const p = publisher(target, 0, 2);
    const a = watch(p.send('t', [msg('1'), msg('2')]));
    const b = watch(p.send('t', [msg('3'), msg('4')]));
    const boom = new Error('not acknowledged');
    target.sends[0]!.fail(boom);
    target.sends[1]!.ack();
    await settle();
    expect(a).to.deep.equal({ state: 'rejected', err: boom });
    expect(b.state).to.equal('resolved');
  });

  it('refuses sends beyond maxInFlightMessages until acknowledgements free room', async () => {
    const target = new ControlledTarget();
    const p = publisher(target, 0, 100, 3);
    const a = watch(p.send('t', [msg('1'), msg('2')]));
    expect(p.inFlightMessages).to.equal(2);
    let refused: unknown;
    await p.send('t', [msg('3'), msg('4')]).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(OverloadedError);
    expect(target.sends, 'the refused messages are not sent').to.have.length(1);
    target.sends[0]!.ack();
    await settle();
    expect(a.state).to.equal('resolved');
    expect(p.inFlightMessages).to.equal(0);
    const c = watch(p.send('t', [msg('3'), msg('4'), msg('5')]));
    target.sends[1]!.ack();
    await settle();
    expect(c.state).to.equal('resolved');
  });

  it('caps a request by bytes: a caller larger than maxBatchBytes is split, and resolves once every part is acked', async () => {
    const target = new ControlledTarget();
    const big = (v: string): ProducerMessage => ({ value: v + 'x'.repeat(999) });
    const cap = 3 * messageBytes(big('a'));
    const p = new BatchingPublisher(target, {
      lingerMs: 0,
      maxBatchMessages: 1000,
      maxBatchBytes: cap,
      maxInFlightMessages: 1000,
      registry: new Registry(),
      inFlightMetric: { name: 'test_inflight_messages', help: 'test' },
    });
    const a = watch(p.send('t', ['1', '2', '3', '4', '5', '6', '7'].map(big)));
    await settle();
    expect(target.sends.map((s) => s.messages.length)).to.deep.equal([3, 3, 1]);
    for (const s of target.sends) {
      expect(s.messages.reduce((n, m) => n + messageBytes(m), 0)).to.be.at.most(cap);
    }
    target.sends[0]!.ack();
    target.sends[1]!.ack();
    await settle();
    expect(a.state, 'not before every part is acknowledged').to.equal('pending');
    target.sends[2]!.ack();
    await settle();
    expect(a.state).to.equal('resolved');
    expect(p.inFlightMessages).to.equal(0);
  });

  it('sends what waits before a caller would take the batch over its byte cap', async () => {
    const target = new ControlledTarget();
    const m = (v: string): ProducerMessage => ({ value: v.repeat(500) });
    const p = new BatchingPublisher(target, {
      lingerMs: 50,
      maxBatchMessages: 1000,
      maxBatchBytes: 2 * messageBytes(m('a')),
      maxInFlightMessages: 1000,
      registry: new Registry(),
      inFlightMetric: { name: 'test_inflight_messages', help: 'test' },
    });
    const a = watch(p.send('t', [m('a')]));
    const b = watch(p.send('t', [m('b'), m('c')]));
    await settle();
    expect(target.sends.map((s) => s.messages.map((x) => String(x.value)[0]))).to.deep.equal([['a'], ['b', 'c']]);
    target.sends.forEach((s) => s.ack());
    await settle();
    expect([a.state, b.state]).to.deep.equal(['resolved', 'resolved']);
  });

  it('keeps room for other owners: one owner beyond maxInFlightPerOwner is refused, the others are not', async () => {
    const target = new ControlledTarget();
    const p = new BatchingPublisher(target, {
      lingerMs: 0,
      maxBatchMessages: 1000,
      maxInFlightMessages: 10,
      maxInFlightPerOwner: 4,
      registry: new Registry(),
      inFlightMetric: { name: 'test_inflight_messages', help: 'test' },
    });
    const first = watch(p.send('t', [msg('1'), msg('2'), msg('3')], 'key-a'));
    let refused: unknown;
    await p.send('t', [msg('4'), msg('5')], 'key-a').catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(OverloadedError);
    const other = watch(p.send('t', [msg('6'), msg('7'), msg('8'), msg('9')], 'key-b'));
    target.sends.forEach((s) => s.ack());
    await settle();
    expect([first.state, other.state]).to.deep.equal(['resolved', 'resolved']);
    // Room given back: key-a may send again.
    const again = watch(p.send('t', [msg('4'), msg('5')], 'key-a'));
    target.sends.at(-1)!.ack();
    await settle();
    expect(again.state).to.equal('resolved');
  });
  it('refuses sends beyond maxInFlightBytes until acknowledgements free room, and reports the bytes', async () => {
    const target = new ControlledTarget();
    const registry = new Registry();
    const m = (v: string): ProducerMessage => ({ key: 'k', value: v.repeat(1000) });
    const size = messageBytes(m('a'));
    const p = new BatchingPublisher(target, {
      lingerMs: 0,
      maxBatchMessages: 1000,
      maxInFlightMessages: 1000,
      maxInFlightBytes: 3 * size,
      registry,
      inFlightMetric: { name: 'test_inflight_messages', help: 'test' },
      inFlightBytesMetric: { name: 'test_inflight_bytes', help: 'test' },
    });
    const a = watch(p.send('t', [m('a'), m('b')]));
    expect(p.inFlightBytes).to.equal(2 * size);
    expect(await registry.getSingleMetricAsString('test_inflight_bytes')).to.match(
      new RegExp(`test_inflight_bytes ${2 * size}$`),
    );
    let refused: unknown;
    // Two messages are well within maxInFlightMessages, but not within the bytes left.
    await p.send('t', [m('c'), m('d')]).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(OverloadedError);
    expect(target.sends, 'the refused messages are not sent').to.have.length(1);
    expect(p.inFlightBytes, 'a refusal takes no room').to.equal(2 * size);
    const b = watch(p.send('t', [m('c')]));
    expect(p.inFlightBytes, 'what fits is accepted').to.equal(3 * size);
    target.sends.forEach((s) => s.ack());
    await settle();
    expect([a.state, b.state]).to.deep.equal(['resolved', 'resolved']);
    expect(p.inFlightBytes).to.equal(0);
    expect(await registry.getSingleMetricAsString('test_inflight_bytes')).to.match(/test_inflight_bytes 0$/);
    const c = watch(p.send('t', [m('c'), m('d'), m('e')]));
    target.sends.at(-1)!.fail(new Error('boom'));
    await settle();
    expect(c.state).to.equal('rejected');
    expect(p.inFlightBytes, 'a failed send gives its room back too').to.equal(0);
  });
});
