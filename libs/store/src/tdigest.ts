/**
 * ClickHouse's t-digest (`quantilesTDigest`, QuantileTDigest.h as in 18.16 and since), ported
 * so that states ClickHouse returned (`hex(toString(quantilesTDigestMergeState(...)(col)))`)
 * can be merged here, as `quantilesTDigestMerge` would, without asking ClickHouse again.
 *
 * The arithmetic is ClickHouse's: means and counts are Float32 (Math.fround after every
 * operation ClickHouse does in float), epsilon 0.01, a compression after every 2048 added
 * centroids and before reading quantiles, centroids sorted by mean (stably, as its radix
 * sort). Quantiles read from one state are ClickHouse's to the bit (unit-tested against
 * answers of 18.16). Merging several states gives what ClickHouse gives for the same states
 * merged in the same order; ClickHouse's own order follows its hash tables and threads,
 * and each state here was compressed when ClickHouse serialised it, so a merge of many
 * buckets can differ from `WITH TOTALS` within the t-digest's own error (docs/api.md).
 */

const EPSILON = Math.fround(0.01);
const MAX_UNMERGED = 2048;
const f = Math.fround;

export class TDigest {
  private means: number[] = [];
  private counts: number[] = [];
  private count = 0;
  private unmerged = 0;

  /** A state as ClickHouse serialises it: a varint size, then (mean, count) Float32 pairs, little-endian. */
  static fromBytes(bytes: Uint8Array): TDigest {
    const d = new TDigest();
    let size = 0;
    let shift = 0;
    let i = 0;
    for (;;) {
      if (i >= bytes.length) throw new Error('t-digest state: truncated size');
      const b = bytes[i++]!;
      size += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) break;
      shift += 7;
      if (shift > 35) throw new Error('t-digest state: size too large');
    }
    if (size > MAX_UNMERGED) throw new Error('t-digest state: too many centroids');
    if (bytes.length - i !== size * 8) throw new Error('t-digest state: wrong length');
    const view = new DataView(bytes.buffer, bytes.byteOffset + i, size * 8);
    for (let k = 0; k < size; k++) {
      d.means.push(view.getFloat32(k * 8, true));
      const c = view.getFloat32(k * 8 + 4, true);
      d.counts.push(c);
      d.count = f(d.count + c);
    }
    return d;
  }

  static fromHex(hex: string): TDigest {
    return TDigest.fromBytes(Uint8Array.from(Buffer.from(hex, 'hex')));
  }

  /** Centroids held (each 8 bytes in ClickHouse, about twice that here). */
  get size(): number {
    return this.means.length;
  }

  /** Adds every centroid of `other` (ClickHouse's merge: addCentroid for each). */
  merge(other: TDigest): this {
    for (let k = 0; k < other.means.length; k++) {
      this.means.push(other.means[k]!);
      this.counts.push(other.counts[k]!);
      this.count = f(this.count + other.counts[k]!);
      if (++this.unmerged >= MAX_UNMERGED) this.compress();
    }
    return this;
  }

  private compress(): void {
    if (this.unmerged === 0) return;
    const order = this.means.map((_, k) => k);
    // Stable, as ClickHouse's LSD radix sort.
    order.sort((a, b) => this.means[a]! - this.means[b]!);
    const means = order.map((k) => this.means[k]!);
    const counts = order.map((k) => this.counts[k]!);
    if (means.length > 3) {
      let l = 0;
      let sum = 0;
      const count = this.count;
      for (let r = 1; r < means.length; r++) {
        const ql = f((sum + counts[l]! * 0.5) / count);
        let err = f(ql * f(1 - ql));
        const qr = f((f(sum + counts[l]!) + counts[r]! * 0.5) / count);
        const err2 = f(qr * f(1 - qr));
        if (err > err2) err = err2;
        const k = f(f(f(4 * count) * err) * EPSILON);
        if (f(counts[l]! + counts[r]!) <= k) {
          // The left centroid takes the right one in.
          const c = f(counts[l]! + counts[r]!);
          means[l] = f(f(f(means[l]! * f(c - counts[r]!)) + f(means[r]! * counts[r]!)) / c);
          counts[l] = c;
        } else {
          sum = f(sum + counts[l]!);
          l++;
          means[l] = means[r]!;
          counts[l] = counts[r]!;
        }
      }
      means.length = l + 1;
      counts.length = l + 1;
    }
    this.means = means;
    this.counts = counts;
    this.unmerged = 0;
  }

  /** quantilesTDigestMerge's answer for ascending `levels`: Float32 values; zeros when empty. */
  quantiles(levels: readonly number[]): number[] {
    if (this.means.length === 0) return levels.map(() => 0);
    this.compress();
    if (this.means.length === 1) return levels.map(() => this.means[0]!);
    const out: number[] = [];
    let x = levels[0]! * this.count;
    let prevX = 0;
    let sum = 0;
    let prevMean = this.means[0]!;
    for (let k = 0; k < this.means.length; k++) {
      const mean = this.means[k]!;
      const currentX = sum + this.counts[k]! * 0.5;
      while (currentX >= x) {
        out.push(interpolate(x, prevX, prevMean, currentX, mean));
        if (out.length >= levels.length) return out;
        x = levels[out.length]! * this.count;
      }
      sum = f(sum + this.counts[k]!);
      prevMean = mean;
      prevX = currentX;
    }
    while (out.length < levels.length) out.push(this.means[this.means.length - 1]!);
    return out;
  }
}

/** ClickHouse's interpolate(): its arguments are Float32, the slope a double. */
function interpolate(x: number, x1: number, y1: number, x2: number, y2: number): number {
  const fx = f(x);
  const fx1 = f(x1);
  const k = f(f(fx - fx1) / f(f(x2) - fx1));
  return f(y1 + k * f(y2 - y1));
}

/** A Float32 as ClickHouse prints it in JSON: the shortest decimal that reads back to the same Float32. */
export function float32Shortest(v: number): number {
  const target = f(v);
  if (!Number.isFinite(target) || target === 0) return target;
  for (let p = 1; p <= 9; p++) {
    const n = Number(target.toPrecision(p));
    if (f(n) === target) return n;
  }
  return target;
}
