import { runMain } from '@telemetry/platform';
import { loadQueryConfig } from './config.js';
import { startQueryService } from './service.js';

// Composition root of the query service: config and dependencies are built in startQueryService.
await runMain('query-service', loadQueryConfig, startQueryService);
