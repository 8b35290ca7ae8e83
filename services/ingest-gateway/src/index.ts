export { createGatewayApp, EVENTS_ROUTE, PIXEL_ROUTE, type GatewayDeps } from './app.js';

export { RateLimiter } from './rate-limit.js';
export { gatewaySpec, loadGatewayConfig, type GatewayConfig } from './config.js';
export { startGateway, type Gateway } from './gateway.js';
export { eventIdFor, eventPartition, toMessages, validateRequest } from './ingest.js';
