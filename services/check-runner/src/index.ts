export { loadRunnerConfig, runnerSpec, type RunnerConfig } from './config.js';
export { classify, httpCall, StreamSearch } from './http-client.js';
export { httpProbe, judge, statusExpected } from './probes/http.js';
export { probeMap, probeWith, type Probe, type ProbeMap } from './probes/index.js';
export { alertIdFor } from './scheduler.js';
export { checkIdFor, nextSlot, phaseOf } from './slots.js';
export { startCheckRunner, type CheckRunner } from './service.js';
export { decide, INITIAL_STATE, stateFromLastAlert, type AlertState } from './state.js';
export { retriable, signature } from './webhooks.js';
