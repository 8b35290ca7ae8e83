export { loadRunnerConfig, runnerSpec, type RunnerConfig } from './config.js';
export { classify, httpCall, StreamSearch } from './http-client.js';
export { checkIdFor, judge, probe, statusExpected } from './probe.js';
export { alertIdFor, nextSlot, phaseOf } from './scheduler.js';
export { startCheckRunner, type CheckRunner } from './service.js';
export { decide, INITIAL_STATE, stateFromLastAlert, type AlertState } from './state.js';
export { AlertDispatcher, OffsetWatermarks, type DispatcherDeps } from './dispatcher.js';
export { CHANNELS, targetsOf, type Channel, type ChannelRegistry } from './channels/index.js';
export { retriable, signature } from './channels/webhook.js';
