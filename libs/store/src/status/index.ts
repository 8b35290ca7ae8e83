export * from './notices.js';
export * from './subscription-links.js';
export * from './feed-entries.js';
export * from './reports.js';
export * from './report-notices.js';
export * from './incident-lookup.js';
export * from './rate-buckets.js';
export * from './subscribers.js';
