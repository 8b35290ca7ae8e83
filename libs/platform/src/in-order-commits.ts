/**
 * The one mechanism that commits offsets in order when work finishes out of order (as
 * PostHog's consumer does with its background tasks): a user hands each piece of work
 * as a promise of durable completion for the messages up to an offset; a partition's
 * offset is committed only once that work and all earlier work of the partition
 * resolved. Commits of every partition go out together, one request at a time, carrying
 * the newest committable offset of each (so they keep up however small the pieces).
 * Work that fails holds its partition's commits where they are until the partitions
 * are taken away (the next owner reads from the last commit: nothing is lost, copies
 * are removed on read); what finishes after it on that partition is not kept. A cap on
 * pending work per topic (units: messages, rows) tells the reader to wait: a topic
 * whose work is stuck holds its own partitions only. Work of a generation taken away
 * still counts until it finishes (it still holds memory).
 */
import type { CommittableOffset } from './kafka-types.js';
import type { Logger } from './logger.js';

export interface InOrderCommitsOptions {
  /** Sends one commit request (the group consumer's commitOffsets). */
  commit(offsets: CommittableOffset[]): Promise<void>;
  /** Units of work pending at most per topic before hasRoom(topic) says no. */
  maxPending: number;
  logger: Logger;
}

type State = 'pending' | 'done' | 'failed';

interface Piece {
  /** The offset to commit once this piece and every earlier one is done. */
  next: bigint;
  state: State;
}

interface Partition {
  topic: string;
  partition: number;
  /** Pieces in offset order; the head is the oldest not yet committable. */
  pieces: Piece[];
  /** A piece failed: nothing more is committed nor kept until the partitions are taken away. */
  failed: boolean;
}

export class InOrderCommits {
  private readonly parts = new Map<string, Partition>();
  /** Bumped when the partitions are taken away: what finishes later is not committed. */
  private generation = 0;
  private pendingUnits = 0;
  private readonly pendingByTopic = new Map<string, number>();
  private readonly committable = new Map<string, CommittableOffset>();
  private committing: Promise<void> | undefined;
  /** Called when work finishes or waiting should end (wake): each checks its own condition. */
  private roomWaiters: ((woken: boolean) => void)[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private isStopping = false;

  constructor(private readonly opts: InOrderCommitsOptions) {}

  /** Units of work handed over and not yet finished (of every topic and generation). */
  get pending(): number {
    return this.pendingUnits;
  }

  hasRoom(topic: string): boolean {
    return (this.pendingByTopic.get(topic) ?? 0) < this.opts.maxPending;
  }

  /**
   * Resolves true once `topic` has room, or false after `timeoutMs` or a wake() without
   * (the caller heartbeats and asks again, or hands its batch back to be read later).
   */
  waitForRoom(topic: string, timeoutMs: number): Promise<boolean> {
    if (this.hasRoom(topic)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = this.roomWaiters.indexOf(check);
        if (i >= 0) this.roomWaiters.splice(i, 1);
        resolve(false);
      }, timeoutMs);
      const check = (woken: boolean): void => {
        const room = this.hasRoom(topic);
        if (!room && !woken) {
          this.roomWaiters.push(check);
          return;
        }
        clearTimeout(timer);
        resolve(room);
      };
      this.roomWaiters.push(check);
    });
  }

  /**
   * The consumer is stopping: waits for room end now, and a commit that fails from now
   * on is expected (the group is being left) and logged at debug. Commits go on.
   */
  stopping(): void {
    this.isStopping = true;
    this.wake();
  }

  /** Ends every wait for room now (the consumer is stopping, or its partitions were taken away). */
  wake(): void {
    for (const w of this.roomWaiters.splice(0)) w(true);
  }

  /**
   * Work on the messages of `topic`/`partition` up to `offset` (inclusive), durable once
   * `done` resolves. Pieces of one partition are tracked in offset order.
   */
  track(topic: string, partition: number, offset: string, done: Promise<void>, units = 1): void {
    const key = `${topic}:${partition}`;
    let part = this.parts.get(key);
    if (!part) {
      part = { topic, partition, pieces: [], failed: false };
      this.parts.set(key, part);
    }
    const piece: Piece = { next: BigInt(offset) + 1n, state: 'pending' };
    if (!part.failed) part.pieces.push(piece);
    this.count(topic, units);
    const generation = this.generation;
    const settled = done
      .then(
        () => {
          piece.state = 'done';
        },
        (err: unknown) => {
          piece.state = 'failed';
          if (generation === this.generation && !part.failed) {
            // Earlier pieces may still commit; this one and every later one never will.
            part.failed = true;
            part.pieces.length = Math.max(0, part.pieces.indexOf(piece));
            this.opts.logger.warn('work failed: its partition commits nothing more until it is read again', {
              topic,
              partition,
              offset,
              err: String(err),
            });
          }
        },
      )
      .finally(() => {
        this.count(topic, -units);
        this.inFlight.delete(settled);
        for (const w of this.roomWaiters.splice(0)) w(false);
        if (generation === this.generation) this.advance(key, part);
      });
    this.inFlight.add(settled);
  }

  /** The partitions were taken away (a rebalance, a crash): nothing tracked so far is committed. */
  revoke(): void {
    this.generation++;
    this.parts.clear();
    this.committable.clear();
    this.wake();
  }

  /** Resolves once every piece handed over so far finished and what it made committable is committed. */
  async settle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    while (this.committing || this.committable.size > 0) {
      if (!this.committing) this.schedule();
      await this.committing;
    }
  }

  private count(topic: string, units: number): void {
    this.pendingUnits += units;
    const n = (this.pendingByTopic.get(topic) ?? 0) + units;
    if (n === 0) this.pendingByTopic.delete(topic);
    else this.pendingByTopic.set(topic, n);
  }

  /** The partition's committable offset, once its oldest pieces are done. */
  private advance(key: string, part: Partition): void {
    let next: bigint | undefined;
    while (part.pieces[0]?.state === 'done') next = part.pieces.shift()!.next;
    // A failed partition stays, so that what is tracked after it is not committed past it.
    if (part.pieces.length === 0 && !part.failed && this.parts.get(key) === part) this.parts.delete(key);
    if (next === undefined) return;
    this.committable.set(key, { topic: part.topic, partition: part.partition, offset: next.toString() });
    this.schedule();
  }

  /** One commit request at a time, with the newest committable offset of every partition. */
  private schedule(): void {
    if (this.committing || this.committable.size === 0) return;
    const offsets = [...this.committable.values()];
    this.committable.clear();
    const generation = this.generation;
    this.committing = this.opts
      .commit(offsets)
      .catch((err: unknown) => {
        // Not committed: after a restart or rebalance these messages are read again
        // (and their copies hidden on read). Nothing is lost. Expected while stopping
        // or when the partitions were taken away meanwhile.
        const expected = this.isStopping || generation !== this.generation;
        this.opts.logger.log(expected ? 'debug' : 'warn', 'commit skipped', { offsets, err: String(err) });
      })
      .finally(() => {
        this.committing = undefined;
        this.schedule();
      });
  }
}
