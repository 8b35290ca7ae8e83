/**
 * Runs parts of `npm run bench:scale` on their own, without main.ts's tables and charts:
 * `tsx --conditions=source bench/scale/try-part.ts query,runner [--smoke]` prints each
 * part's curve as JSON (for trying a part while writing it).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../harness/processes.js';
import { Benchmark, Cleanups, SMOKE } from '../../harness/run.js';
import type { CurvePart } from './curve.js';
import { queryCurve } from './query.js';
import { runnerCurve } from './runner.js';

const PARTS: Record<string, CurvePart> = { query: queryCurve, runner: runnerCurve };
const names = (process.argv[2] ?? 'query,runner').split(',');
const b = new Benchmark('bench:scale');
const cleanups = new Cleanups(b.log);
let code = 1;
try {
  await build(b.log);
  const bench = await b.stack(cleanups);
  const logDir = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  for (const name of names) {
    const part = PARTS[name];
    if (!part) throw new Error(`no part ${name}`);
    const t = performance.now();
    const curve = await part({ bench, machine: bench.machine, cleanups, log: b.log, smoke: SMOKE, logDir });
    b.log(`${name}: ${((performance.now() - t) / 1000).toFixed(0)} s`);
    process.stdout.write(`${JSON.stringify(curve)}\n`);
  }
  code = 0;
} catch (err) {
  b.log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await cleanups.run();
}
process.exit(code);
