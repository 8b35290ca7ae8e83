export * from './notices.js';
export * from './subscription-links.js';
export * from './feed-entries.js';
