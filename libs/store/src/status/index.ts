export * from './notices.js';
export * from './subscription-links.js';
export * from './rate-buckets.js';
export * from './subscribers.js';
