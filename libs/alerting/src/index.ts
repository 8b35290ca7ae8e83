export * from './channels/index.js';
export * from './notification.js';
export * from './templates.js';
export * from './ack-links.js';
export * from './mail.js';
export * from './config.js';
export * from './mailer.js';
