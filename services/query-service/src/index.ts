export { parseChecksQuery } from './checks.route.js';
export { loadQueryConfig, querySpec, type QueryConfig } from './config.js';
export { startQueryService, type QueryService } from './service.js';
