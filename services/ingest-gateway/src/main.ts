import { runMain } from '@telemetry/platform';
import { loadGatewayConfig } from './config.js';
import { startGateway } from './gateway.js';

// Composition root of the ingest gateway: config and dependencies are built in startGateway.
await runMain('ingest-gateway', loadGatewayConfig, startGateway);
