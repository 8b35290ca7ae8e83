/**
 * Versions of a registry's rows (ReplacingMergeTree(version)): microseconds of the clock,
 * but always above the version a change was based on and above this process's last, so
 * they grow even when replicas' clocks differ.
 */
export class RowVersions {
  private last = 0;

  next(after = 0): number {
    this.last = Math.max(this.last + 1, Date.now() * 1000, after + 1);
    return this.last;
  }
}
