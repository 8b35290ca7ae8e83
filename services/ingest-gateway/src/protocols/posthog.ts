import type { Express } from 'express';
import type { ProtocolDeps } from './protocol.js';

/** posthog's protocol (docs/compat.md). SCAFFOLD: written by its owner. */
export function posthogRoutes(_app: Express, _deps: ProtocolDeps): void {}
