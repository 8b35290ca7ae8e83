/**
 * What browser code (the console) may import of monitors: the types, their modules, the
 * settings and their schema. Nothing here pulls in the validators (ajv).
 */
export * from './monitor-fields.js';
export * from './monitor-types/index.js';
export { MONITOR_TYPES, MONITOR_METHODS, DNS_RECORD_TYPES, type MonitorType } from './limits.js';
