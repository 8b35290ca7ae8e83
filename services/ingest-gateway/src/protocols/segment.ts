import type { Express } from 'express';
import type { ProtocolDeps } from './protocol.js';

/** segment's protocol (docs/compat.md). SCAFFOLD: written by its owner. */
export function segmentRoutes(_app: Express, _deps: ProtocolDeps): void {}
