export { createGatewayApp, EVENTS_ROUTE, PIXEL_ROUTE, type GatewayDeps } from './app.js';

export { RateLimiter } from './rate-limit.js';
export { gatewaySpec, loadGatewayConfig, type GatewayConfig } from './config.js';
export { startGateway, type Gateway } from './gateway.js';
export { eventIdFor, eventPartition, toMessages, validateRequest } from './ingest.js';
export { type Intake, withoutSuppressed } from './intake.js';
export { NO_STAMP, stampOf, type RequestStamp } from './request-stamp.js';
export { corsFor } from './cors.js';
export { type ProtocolDeps } from './protocols/protocol.js';
export { segmentRoutes, SEGMENT_BATCH_ROUTES, SEGMENT_SINGLE_ROUTES } from './protocols/segment.js';
export { SEGMENT_LIMITS, segmentEvents, segmentWriteKey } from './protocols/segment/messages.js';
export { arrayElementSpans } from './protocols/segment/spans.js';
export { gatewayOrigin, segmentSettings } from './protocols/segment/settings.js';
export { posthogRoutes, POSTHOG_CAPTURE_PATHS } from './protocols/posthog.js';
export { decodePosthogBody } from './protocols/posthog/decode.js';
export { posthogBatch, posthogCompatEvent, posthogIdentity } from './protocols/posthog/map.js';
export { posthogErrorBody, remoteConfig, remoteConfigScript } from './protocols/posthog/answers.js';
