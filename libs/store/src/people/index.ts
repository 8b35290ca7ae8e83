export * from './sessions.js';
export * from './passwords.js';
export * from './people.js';
export * from './throttle.js';
export * from './totp.js';
export * from './resets.js';
