import type { RequestHandler } from 'express';
import { AppError, type Logger } from '@telemetry/platform';
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

/**
 * `err` answered with `status` when its code is one of `codes` (the code stays ours): how a
 * protocol gives our errors the statuses its clients understand (docs/compat.md).
 */
export function withStatus(err: unknown, codes: ReadonlySet<string>, status: number): unknown {
  if (err instanceof AppError && codes.has(err.code) && err.status !== status) {
    return new AppError(err.code, err.message, err.details, err.headers, err.expose, status);
  }
  return err;
}
