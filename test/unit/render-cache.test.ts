import { expect } from 'chai';
import { RenderCache } from '../../services/query-service/src/render-cache.js';

/** A render the test finishes by hand. */
function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('RenderCache', () => {
  let now = 0;
  let outcomes: string[] = [];
  const cache = (): RenderCache<string> =>
    new RenderCache<string>(
      1000,
      5000,
      (o) => outcomes.push(o),
      () => now,
    );
  beforeEach(() => {
    now = 1_000_000;
    outcomes = [];
  });

  it('renders once for every request that comes while a render is in flight', async () => {
    const c = cache();
    const d = deferred<string>();
    let calls = 0;
    const render = (): Promise<string> => {
      calls++;
      return d.promise;
    };
    const waiting = Array.from({ length: 10 }, () => c.get('p', render));
    d.resolve('page');
    const answers = await Promise.all(waiting);
    expect(calls).to.equal(1);
    expect(answers.every((a) => a.value === 'page' && !a.stale && a.until === now + 1000)).to.equal(true);
    now += 999;
    expect((await c.get('p', () => Promise.reject(new Error('not called')))).value).to.equal('page');
    expect(outcomes).to.deep.equal(['ok']);
  });

  it('answers the last good value, stale, after a failure, and tries again only after retryMs', async () => {
    const c = cache();
    await c.get('p', () => Promise.resolve('v1'));
    now += 1000; // expired
    const failing = (): Promise<string> => Promise.reject(new Error('ClickHouse is away'));
    const stale = await c.get('p', failing);
    expect(stale).to.deep.equal({ value: 'v1', stale: true, until: now + 5000 });
    now += 4999;
    expect((await c.get('p', () => Promise.resolve('not yet'))).value).to.equal('v1');
    now += 1;
    expect(await c.get('p', () => Promise.resolve('v2'))).to.deep.equal({
      value: 'v2',
      stale: false,
      until: now + 1000,
    });
    expect(outcomes).to.deep.equal(['ok', 'failed', 'ok']);
  });

  it('answers the failure when there never was a good value, once per retryMs', async () => {
    const c = cache();
    const err = new Error('ClickHouse is away');
    let calls = 0;
    const failing = (): Promise<string> => {
      calls++;
      return Promise.reject(err);
    };
    for (let i = 0; i < 3; i++) {
      try {
        await c.get('p', failing);
        expect.fail('answered');
      } catch (e) {
        expect(e).to.equal(err);
      }
    }
    expect(calls).to.equal(1);
  });

  it('evicts one key: the next request renders anew, a render in flight is kept nowhere', async () => {
    const c = cache();
    await c.get('a', () => Promise.resolve('a1'));
    await c.get('b', () => Promise.resolve('b1'));
    const d = deferred<string>();
    now += 1000;
    const inFlight = c.get('a', () => d.promise);
    c.evict('a');
    d.resolve('a-before-the-edit');
    expect((await inFlight).value).to.equal('a-before-the-edit');
    expect((await c.get('a', () => Promise.resolve('a2'))).value).to.equal('a2');
    now -= 1000;
    expect((await c.get('b', () => Promise.resolve('b2'))).value).to.equal('b1');
  });
});
