/**
 * PLACEHOLDER, replaced by the real part (another branch of issue 48 writes it): the
 * query part of `npm run bench:scale`. Until then it throws, and main.ts reports the part
 * as not measured; run the others with BENCH_SCALE_PARTS=gateway,consumer.
 */
import type { CurvePart } from './curve.js';

export const queryCurve: CurvePart = () => Promise.reject(new Error('query part: not built'));
