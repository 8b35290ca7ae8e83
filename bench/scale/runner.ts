/**
 * PLACEHOLDER, replaced by the real part (another branch of issue 48 writes it): the
 * runner part of `npm run bench:scale`. Until then it throws, and main.ts reports the part
 * as not measured; run the others with BENCH_SCALE_PARTS=gateway,consumer.
 */
import type { CurvePart } from './curve.js';

export const runnerCurve: CurvePart = () => Promise.reject(new Error('runner part: not built'));
