import { expect } from 'chai';
import { Slots } from '@telemetry/platform';

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
