export * from './channels/index.js';
export * from './notification.js';
export * from './templates.js';
export * from './ack-links.js';
export * from './mail.js';
