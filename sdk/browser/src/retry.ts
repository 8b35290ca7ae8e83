/**
 * The delay before retry number `failures` (1, 2, …): exponential with "equal jitter" (a
 * uniform draw between half and all of min(max, first x 2^(failures-1))), so that the pages
 * of a shop that all lost the network at once do not come back in step.
 */
export function backoffMs(failures: number, firstMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, firstMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/**
 * Milliseconds to wait from a `Retry-After` header: delay-seconds or an HTTP date
 * (RFC 9110, 10.2.3). Undefined when it is absent or unreadable; at most a day.
 */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (!header) return undefined;
  const v = header.trim();
  // An HTTP date names its day and month; Date.parse alone would take "-1" for a year.
  const ms = /^\d+$/.test(v) ? Number(v) * 1000 : /[a-z]/i.test(v) ? Date.parse(v) - now : NaN;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), 86_400_000) : undefined;
}
