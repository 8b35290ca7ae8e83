import { expect } from 'chai';
import { backoffMs, retryAfterMs } from '../../sdk/browser/src/retry.js';
import { uuidv7Factory } from '../../sdk/browser/src/uuid.js';
import { EventStore, idOf, ownerOf } from '../../sdk/browser/src/store.js';
import { Identity } from '../../sdk/browser/src/identity.js';

const UUID7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('browser SDK: ids, retry delays and storage keys (unit)', () => {
  it('makes UUIDv7 ids that carry the time and sort in the order they were made, even within one millisecond', () => {
    let t = Date.UTC(2026, 10, 23, 12, 0, 0, 123);
    const random = (b: Uint8Array): Uint8Array => b.fill(0xff);
    const next = uuidv7Factory(() => t, random);
    const ids = Array.from({ length: 5000 }, (_, i) => {
      if (i % 1000 === 999) t++;
      return next();
    });
    for (const id of ids) expect(id).to.match(UUID7);
    expect([...ids].sort()).to.deep.equal(ids);
    expect(new Set(ids).size).to.equal(ids.length);
    expect(Number.parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16)).to.equal(Date.UTC(2026, 10, 23, 12, 0, 0, 123));
    // More ids in one millisecond than the counter holds: the next millisecond is borrowed.
    const burst = Array.from({ length: 5000 }, () => next());
    expect([...burst].sort()).to.deep.equal(burst);
    expect(new Set(burst).size).to.equal(burst.length);
    // A clock that steps back does not make an id sort before an older one.
    const before = next();
    t -= 10_000;
    expect(next() > before).to.equal(true);
  });

  it('backs off exponentially, jittered between half and all of the step, never past the maximum', () => {
    expect(backoffMs(1, 1000, 60_000, () => 0)).to.equal(500);
    expect(backoffMs(1, 1000, 60_000, () => 1)).to.equal(1000);
    expect(backoffMs(4, 1000, 60_000, () => 1)).to.equal(8000);
    expect(backoffMs(40, 1000, 60_000, () => 1)).to.equal(60_000);
    expect(backoffMs(40, 1000, 60_000, () => 0)).to.equal(30_000);
  });

  it('reads Retry-After as seconds or as an HTTP date, and ignores what it cannot read', () => {
    const now = Date.UTC(2026, 10, 23, 12, 0, 0);
    expect(retryAfterMs('3', now)).to.equal(3000);
    expect(retryAfterMs(' 0 ', now)).to.equal(0);
    expect(retryAfterMs(new Date(now + 5000).toUTCString(), now)).to.equal(5000);
    expect(retryAfterMs(new Date(now - 5000).toUTCString(), now)).to.equal(0);
    expect(retryAfterMs('999999999', now)).to.equal(86_400_000);
    expect(retryAfterMs(null, now)).to.equal(undefined);
    expect(retryAfterMs('soon', now)).to.equal(undefined);
    expect(retryAfterMs('-1', now)).to.equal(undefined);
  });

  it('names an event key by its page and its id', () => {
    const k = 'tlm1.0a1b2c3d.e.a1b2c3d4e5f6.01a209ca-facd-711a-9af5-b8ac23ce8668';
    expect(ownerOf(k)).to.equal('a1b2c3d4e5f6');
    expect(idOf(k)).to.equal('01a209ca-facd-711a-9af5-b8ac23ce8668');
  });

  it('forgets a stored user id the gateway would refuse (edited by hand, another version), so events keep flowing', () => {
    const store = new EventStore('t.', () => undefined);
    const identity = new Identity(store, () => 'anon-1');
    identity.identify('user-1');
    expect(identity.userId()).to.equal('user-1');
    store.set('t.u', 'bad\nid');
    expect(identity.userId()).to.equal(undefined);
    expect(store.get('t.u')).to.equal(null);
    store.set('t.u', 'x'.repeat(257));
    expect(identity.userId()).to.equal(undefined);
    expect(identity.anonymousId()).to.equal('anon-1');
  });
});
