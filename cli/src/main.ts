import { run, terminalAsk } from './cli.js';

// The process around run(): its arguments, environment, streams and exit code.
process.exitCode = await run(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  env: process.env,
  ask: terminalAsk(),
});
