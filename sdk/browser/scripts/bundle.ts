import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

/**
 * Builds the SDK's two files from src/ (types come from `tsc -b`):
 * - dist/v1.js: the `<script>` build the gateway serves at /sdk/v1.js (IIFE, minified);
 * - dist/index.js: the ES module of the npm package, for bundlers and plugins.
 * Both inline the few limits they share with the gateway (libs/contract/src/limits.ts).
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const common: BuildOptions = {
  absWorkingDir: root,
  bundle: true,
  // Browsers of the last five years: async/await, ??, ?. and class fields stay as written.
  target: ['es2020'],
  platform: 'browser',
  conditions: ['source'],
  legalComments: 'none',
  logLevel: 'warning',
};

await Promise.all([
  build({ ...common, entryPoints: ['src/global.ts'], outfile: 'dist/v1.js', format: 'iife', minify: true }),
  build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/index.js', format: 'esm' }),
]);
const v1 = readFileSync(`${root}/dist/v1.js`);
process.stdout.write(`sdk/browser/dist/v1.js: ${v1.length} bytes, ${gzipSync(v1, { level: 9 }).length} gzipped\n`);
