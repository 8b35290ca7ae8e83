/**
 * The bound of one outgoing call of a check (an HTTP exchange, a DNS query): `cancel` runs
 * when `timeoutMs` has passed or the caller's signal aborts (the runner stopping), whichever
 * comes first. The caller asks `timedOut()` to tell a timeout from any other failure, and
 * calls `clear()` once the call is over, whatever its outcome.
 */
export interface Deadline {
  timedOut: () => boolean;
  clear: () => void;
}

export function deadline(timeoutMs: number, signal: AbortSignal | undefined, cancel: () => void): Deadline {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    cancel();
  }, timeoutMs);
  const onAbort = (): void => cancel();
  signal?.addEventListener('abort', onAbort, { once: true });
  return {
    timedOut: () => timedOut,
    clear: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}
