/**
 * Waiting with a deadline, the one way the dev stack, the harness and the tests poll:
 * `until` asks a probe again and again (an error counts as "not yet", a Fatal ends it at
 * once) and fails at the deadline with what it waited for and the probe's last error.
 */
/** Polls `probe` until it returns a value (errors count as "not yet"); throws at the deadline. */
export async function until<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      if (err instanceof Fatal) throw err;
      last = err;
    }
    if (Date.now() > deadline) {
      const w = typeof what === 'string' ? what : what();
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${w}${last instanceof Error ? `: ${last.message}` : ''}`,
      );
    }
    await sleep(everyMs);
  }
}

/** An error that ends an `until` at once (e.g. the process exited). */
export class Fatal extends Error {}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
