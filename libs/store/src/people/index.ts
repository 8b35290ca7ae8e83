export * from './sessions.js';
export * from './passwords.js';
export * from './people.js';
export * from './memberships.js';
export * from './invitations.js';
export * from './settings.js';
export * from './owners.js';
