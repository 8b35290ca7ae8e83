export { createGatewayApp, type GatewayDeps, type Publisher } from './app.js';
export { gatewaySpec, loadGatewayConfig, type GatewayConfig } from './config.js';
export { startGateway, type Gateway } from './gateway.js';
export { eventIdFor, parseBody, withinDepth } from './ingest.js';
