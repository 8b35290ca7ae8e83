/**
 * What the parts of `npm run bench:scale` share: a list of counts from the environment (the
 * points of a curve: keys, processes, monitors), and small figures helpers.
 */
import { SMOKE } from '../../harness/run.js';

/** `name` as comma-separated positive integers ("1,100,10000"), ascending and distinct; `fallback` (or `smoke`) when unset. */
export function countList(name: string, fallback: readonly number[], smoke: readonly number[] = fallback): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return [...(SMOKE ? smoke : fallback)];
  const counts = raw.split(',').map((s) => Number(s.trim()));
  if (counts.length === 0 || counts.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new Error(`${name}: comma-separated counts of at least 1, such as ${fallback.join(',')}, not ${raw}`);
  }
  return [...new Set(counts)].sort((a, b) => a - b);
}

/** Rounds `i` (1-based) of points alternating ascending and descending, so that drift over a run falls on every point alike. */
export function roundOrder<T>(points: readonly T[], round: number): T[] {
  return round % 2 === 1 ? [...points] : [...points].reverse();
}
