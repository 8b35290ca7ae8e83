/**
 * Slots for long-running work: at most `total` at once, and at most `perOwner` held by
 * one owner (an API key), so one owner cannot take every slot. `tryTake` never waits: a
 * caller without a slot answers at once (429 with Retry-After) instead of queueing.
 */
export class Slots {
  private held = 0;
  private readonly byOwner = new Map<string, number>();

  constructor(
    readonly total: number,
    readonly perOwner: number,
  ) {}

  /** A release function (idempotent), or why no slot was given. */
  tryTake(owner: string): { release: () => void } | { refused: 'total' | 'owner' } {
    const owned = this.byOwner.get(owner) ?? 0;
    if (owned >= this.perOwner) return { refused: 'owner' };
    if (this.held >= this.total) return { refused: 'total' };
    this.held++;
    this.byOwner.set(owner, owned + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held--;
        const left = (this.byOwner.get(owner) ?? 1) - 1;
        if (left === 0) this.byOwner.delete(owner);
        else this.byOwner.set(owner, left);
      },
    };
  }

  /** Slots in use (all owners). */
  inUse(): number {
    return this.held;
  }
}

/**
 * Slots shared fairly among owners (the check runner's tenants), and work-conserving:
 * nothing is idle while someone could use it, yet one owner cannot take what the others
 * may need.
 *
 * Each owner is guaranteed `min(share, demand)` slots, where `share` is
 * `floor(total / owners)` (at least 1) and `demand` the most it can ever hold at once
 * (the runner: its monitors here, each of which runs one check at a time). The guaranteed
 * slots an owner does not hold are kept free for it; every other free slot may be
 * borrowed by any owner, beyond its share. So an owner under its guarantee always finds a
 * slot (while owners <= total), whatever the others do, and an owner alone may use all.
 * `tryTake` never waits.
 */
export class FairSlots {
  private held = 0;
  private share: number;
  /** Σ over owners of (guaranteed − held), where positive: slots kept free for them. */
  private reserved = 0;
  private readonly owners = new Map<string, { demand: number; held: number }>();

  constructor(readonly total: number) {
    this.share = total;
  }

  /** How many slots each owner can use at most (owners not listed have no guarantee). */
  setDemand(demand: ReadonlyMap<string, number>): void {
    for (const [owner, o] of this.owners) {
      if (!demand.has(owner)) {
        if (o.held === 0) this.owners.delete(owner);
        else o.demand = 0;
      }
    }
    for (const [owner, d] of demand) {
      const o = this.owners.get(owner);
      if (o) o.demand = d;
      else this.owners.set(owner, { demand: d, held: 0 });
    }
    this.share = Math.max(1, Math.floor(this.total / Math.max(1, demand.size)));
    this.reserved = 0;
    for (const o of this.owners.values()) this.reserved += this.reserve(o);
  }

  /**
   * A release function (idempotent), or why no slot was given: `total` (all in use) or
   * `share` (the free ones are kept for owners under their guarantee).
   */
  tryTake(owner: string): { release: () => void } | { refused: 'total' | 'share' } {
    if (this.held >= this.total) return { refused: 'total' };
    let o = this.owners.get(owner);
    if (!o) this.owners.set(owner, (o = { demand: 0, held: 0 }));
    const mine = this.reserve(o);
    // Beyond its guarantee, an owner borrows only what is not kept for the others.
    if (mine === 0 && this.total - this.held <= this.reserved) return { refused: 'share' };
    this.take(o, 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.take(o, -1);
        if (o.held === 0 && o.demand === 0 && this.owners.get(owner) === o) this.owners.delete(owner);
      },
    };
  }

  /** Slots in use (all owners). */
  inUse(): number {
    return this.held;
  }

  /** The guaranteed slots of one owner, now. */
  guaranteed(owner: string): number {
    return Math.min(this.share, this.owners.get(owner)?.demand ?? 0);
  }

  private reserve(o: { demand: number; held: number }): number {
    return Math.max(0, Math.min(this.share, o.demand) - o.held);
  }

  private take(o: { demand: number; held: number }, n: 1 | -1): void {
    this.reserved -= this.reserve(o);
    o.held += n;
    this.held += n;
    this.reserved += this.reserve(o);
  }
}
