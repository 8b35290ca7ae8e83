export * from './notices.js';
export * from './subscription-links.js';
export * from './feed-entries.js';
export * from './deliveries.js';
export * from './domains.js';
export * from './rate-buckets.js';
export * from './subscribers.js';
