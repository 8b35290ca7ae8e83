import { LIMITS, PRINTABLE_PATTERN } from '@telemetry/contract/limits';
import type { EventStore } from './store.js';

/**
 * Who the events are about, as Segment's analytics.js and posthog-js keep it: an anonymous
 * id made once for the visitor and kept (`<prefix>a`), and the user id `identify` gave
 * (`<prefix>u`) until `reset`. Both are read from the store at each event, so every tab of
 * the site sends the same ones. The store is localStorage (memory where it is missing or
 * disabled, and with `persistence: 'memory'`): no cookies.
 */
export class Identity {
  constructor(
    private readonly store: EventStore,
    private readonly newId: () => string,
  ) {}

  /** The anonymous id; made (a UUIDv7) and kept the first time it is asked for. */
  anonymousId(): string {
    const key = `${this.store.prefix}a`;
    let id = this.store.get(key);
    if (!id || userIdProblem(id)) this.store.set(key, (id = this.newId()));
    return id;
  }

  /** The user id `identify` kept; one the gateway would refuse (edited by hand, another version's) is forgotten. */
  userId(): string | undefined {
    const key = `${this.store.prefix}u`;
    const id = this.store.get(key);
    if (!id) return undefined;
    if (userIdProblem(id)) {
      this.store.remove(key);
      return undefined;
    }
    return id;
  }

  /** Sets the user id of the events tracked from now on (the caller checked it). */
  identify(userId: string): void {
    this.store.set(`${this.store.prefix}u`, userId);
  }

  /** Forgets the user id and the anonymous id: the next event starts a new visitor (a log-out). */
  reset(): void {
    this.store.remove(`${this.store.prefix}u`);
    this.store.remove(`${this.store.prefix}a`);
  }
}

const PRINTABLE = new RegExp(PRINTABLE_PATTERN);

/** Why the gateway would refuse `id` as `user_id` (or `anonymous_id`), or undefined. */
export function userIdProblem(id: unknown): string | undefined {
  return typeof id === 'string' && id !== '' && [...id].length <= LIMITS.maxIdentityLength && PRINTABLE.test(id)
    ? undefined
    : `a user id is 1 to ${LIMITS.maxIdentityLength} characters without control characters`;
}
