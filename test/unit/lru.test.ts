import { expect } from 'chai';
import { ByteLru } from '@telemetry/platform';

describe('ByteLru', () => {
  it('forgets the least recently read entries beyond its bytes, and never keeps one larger than all', () => {
    const lru = new ByteLru<string>(10);
    lru.set('a', 'A', 4);
    lru.set('b', 'B', 4);
    expect(lru.get('a')).to.equal('A'); // a is now the most recent
    lru.set('c', 'C', 4); // 12 bytes: b goes
    expect([lru.get('a'), lru.get('b'), lru.get('c')]).to.deep.equal(['A', undefined, 'C']);
    expect(lru.size()).to.deep.equal({ entries: 2, bytes: 8 });
    lru.set('a', 'A2', 2); // replaced, not added
    expect(lru.size()).to.deep.equal({ entries: 2, bytes: 6 });
    lru.set('huge', 'H', 11);
    expect(lru.get('huge')).to.equal(undefined);
    expect(lru.size().entries).to.equal(2);
  });
});
