export { checksSql, encodeCursor, parseChecksQuery, rowToCheck, type CheckRow } from './checks.route.js';
export { loadQueryConfig, querySpec, type QueryConfig } from './config.js';
export { toIsoSeconds } from './params.js';
export { startQueryService, type QueryService } from './service.js';
