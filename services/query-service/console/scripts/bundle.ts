import { gzipSync } from 'node:zlib';
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Builds the console's two scripts from src/ into dist/, which the query service serves
 * at /console/ (src/console.route.ts): main.js (the console) and status.js (a public
 * status page), each one minified ES module. Bundled, the console imports the monitor
 * catalog of libs/contract (its types, fields and labels) as the API validates them.
 * Types are checked by `tsc -b` (the console's tsconfig emits nothing).
 */
const root = fileURLToPath(new URL('..', import.meta.url));
// NOTE: the service serves every .js in dist/: files of an older build must not stay there.
rmSync(`${root}/dist`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: ['src/main.ts', 'src/status.ts'],
  outdir: 'dist',
  bundle: true,
  format: 'esm',
  minify: true,
  // Browsers of the last five years, as the SDK (sdk/browser/scripts/bundle.ts).
  target: ['es2020'],
  platform: 'browser',
  // libs/contract from its TypeScript, without a build of its own first.
  conditions: ['source'],
  legalComments: 'none',
  logLevel: 'warning',
});
for (const name of ['main.js', 'status.js']) {
  const js = readFileSync(`${root}/dist/${name}`);
  process.stdout.write(
    `services/query-service/console/dist/${name}: ${js.length} bytes, ${gzipSync(js, { level: 9 }).length} gzipped\n`,
  );
}
