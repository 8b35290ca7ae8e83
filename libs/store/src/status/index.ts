export * from './notices.js';
