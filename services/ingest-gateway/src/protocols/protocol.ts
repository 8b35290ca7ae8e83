import type { RequestHandler } from 'express';
import type { Logger } from '@telemetry/platform';
import type { GatewayConfig } from '../config.js';
import type { Intake } from '../intake.js';

/** What a protocol module gets from the gateway's composition root. */
export interface ProtocolDeps {
  config: GatewayConfig;
  logger: Logger;
  intake: Intake;
  /** Our CORS for browser senders (any origin; the key, not the origin, is the credential). */
  cors: RequestHandler;
}
