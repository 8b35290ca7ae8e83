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
