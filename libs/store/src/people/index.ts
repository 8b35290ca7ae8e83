export * from './sessions.js';
export * from './passwords.js';
