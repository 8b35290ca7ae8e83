export * from './sessions.js';
export * from './passwords.js';
export * from './people.js';
export * from './oidc.js';
