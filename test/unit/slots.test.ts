import { expect } from 'chai';
import { FairSlots, Slots } from '@telemetry/platform';

describe('Slots (export concurrency caps)', () => {
  it('gives one owner at most perOwner slots, and everyone at most total', () => {
    const slots = new Slots(3, 2);
    const a1 = slots.tryTake('a');
    const a2 = slots.tryTake('a');
    expect(slots.tryTake('a')).to.deep.equal({ refused: 'owner' });
    const b1 = slots.tryTake('b');
    expect(slots.tryTake('c')).to.deep.equal({ refused: 'total' });
    expect(slots.inUse()).to.equal(3);
    if ('refused' in a1 || 'refused' in a2 || 'refused' in b1) throw new Error('a slot was refused');
    a1.release();
    a1.release(); // idempotent: a second release frees nothing more
    expect(slots.inUse()).to.equal(2);
    expect(slots.tryTake('a')).to.not.have.property('refused');
    expect(slots.tryTake('c')).to.deep.equal({ refused: 'total' });
    a2.release();
    b1.release();
    expect(slots.inUse()).to.equal(1);
  });
});

describe('FairSlots (check slots shared among tenants)', () => {
  const took = (r: { release: () => void } | { refused: string }): (() => void) => {
    if ('refused' in r) throw new Error(`refused: ${r.refused}`);
    return r.release;
  };

  it('keeps the guaranteed slots of the others free, and lends the rest', () => {
    const slots = new FairSlots(10);
    // a can use 30, b 1 and c 3: shares of floor(10 / 3) = 3; b is guaranteed 1, c 3.
    slots.setDemand(
      new Map([
        ['a', 30],
        ['b', 1],
        ['c', 3],
      ]),
    );
    for (let i = 0; i < 6; i++) took(slots.tryTake('a'));
    expect(slots.tryTake('a')).to.deep.equal({ refused: 'share' });
    const b = took(slots.tryTake('b'));
    took(slots.tryTake('c'));
    // c may borrow? No: its guarantee is 3 and it holds 1; the two left are its own.
    took(slots.tryTake('c'));
    took(slots.tryTake('c'));
    expect(slots.inUse()).to.equal(10);
    expect(slots.tryTake('b')).to.deep.equal({ refused: 'total' });
    b();
    b();
    expect(slots.inUse()).to.equal(9);
    expect(slots.tryTake('a'), "b's guaranteed slot").to.deep.equal({ refused: 'share' });
    took(slots.tryTake('b'));
  });

  it('gives an owner alone every slot, and recomputes the shares when owners come and go', () => {
    const slots = new FairSlots(4);
    slots.setDemand(new Map([['a', 100]]));
    const held = Array.from({ length: 4 }, () => took(slots.tryTake('a')));
    expect(slots.tryTake('a')).to.deep.equal({ refused: 'total' });
    slots.setDemand(
      new Map([
        ['a', 100],
        ['b', 5],
      ]),
    );
    expect(slots.guaranteed('b')).to.equal(2);
    held[0]!();
    // The freed slot is b's: a holds more than its share.
    expect(slots.tryTake('a')).to.deep.equal({ refused: 'share' });
    took(slots.tryTake('b'));
    // An owner gone while it holds slots releases them without harm.
    slots.setDemand(new Map([['b', 5]]));
    for (const r of held.slice(1)) r();
    expect(slots.inUse()).to.equal(1);
    expect(slots.guaranteed('a')).to.equal(0);
  });
});
