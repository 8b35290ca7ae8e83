export * from './error-codes.js';
export * from './envelope.js';
export * from './limits.js';
export * from './schemas.js';
export * from './types.js';
export * from './validators.js';
export * from './openapi.js';
export * from './time.js';
