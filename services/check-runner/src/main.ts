import { runMain } from '@telemetry/platform';
import { loadRunnerConfig } from './config.js';
import { startCheckRunner } from './service.js';

// Composition root of the check runner: config and dependencies are built in startCheckRunner.
await runMain('check-runner', loadRunnerConfig, startCheckRunner);
