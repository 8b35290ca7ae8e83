export { loadRunnerConfig, runnerSpec, type RunnerConfig } from './config.js';
export { classify, httpCall, StreamSearch } from './http-client.js';
export { checkIdFor, judge, probe, statusExpected } from './probe.js';
export { alertIdFor, nextSlot, phaseOf } from './scheduler.js';
export { startCheckRunner, type CheckRunner } from './service.js';
export { decide, INITIAL_STATE, stateFromLastAlert, type AlertState } from './state.js';
export { retriable, signature } from './webhooks.js';
