#!/usr/bin/env node
/* global process */
// The `telemetry` bin. NOTE: npm links (and makes executable) a package's bin when it
// installs, and only if the file exists then; the compiled CLI (dist/main.js) does not
// on a fresh clone, built after `npm install`. So the bin is this file, kept in git with
// its executable bit, and it runs the build.
import('../dist/main.js').catch((e) => {
  if (e && e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes('dist/main.js')) {
    process.stderr.write('telemetry: the CLI is not built: run `npx tsc -b` (or `npm run build`) first\n');
    process.exitCode = 1;
  } else throw e;
});
