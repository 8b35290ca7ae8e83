import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Counter } from 'prom-client';
import { AppError, type FairPublisher } from '@telemetry/platform';
import type { KeyStore, SuppressionList, VerifiedKey } from '@telemetry/store';
import type { GatewaySchemas } from './event-schemas.js';
import { eventOf, type EventProducerMessage } from './ingest.js';
import { applyLimit, type RateLimiter } from './rate-limit.js';

/**
 * What every ingest route shares, whatever its protocol (ours, Segment's, PostHog's):
 * the key's checks (kind, origin, rate limit) and the publish that answers only once
 * Kafka has the events. A protocol module parses and maps; it calls these two.
 */
export interface Intake {
  /**
   * The telemetry key `raw` (undefined: none was sent), as our own endpoint checks it:
   * MISSING_CREDENTIALS, INVALID_CREDENTIALS, ORIGIN_NOT_ALLOWED (a key restricted to
   * origins, and the request's Origin is not one), RATE_LIMITED (RateLimit headers set on `res`).
   */
  authenticate(raw: string | undefined, req: IncomingMessage, res: ServerResponse): VerifiedKey;
  /**
   * Publishes `messages` on the events topic; resolves once Kafka acknowledged all of them.
   * First the tenant's event schemas: SCHEMA_VIOLATION (nothing published) or schema_failure set.
   * Then events of an id on the tenant's suppression list (docs/deletions.md) are left out:
   * the request is still answered 2xx (a client must not retry them), they are only counted.
   */
  publish(key: VerifiedKey, messages: EventProducerMessage[]): Promise<void>;
}

export interface IntakeDeps {
  keys: Pick<KeyStore, 'authenticate'>;
  limiter: RateLimiter;
  publisher: FairPublisher;
  eventsTopic: string;
  accepted: Counter;
  /** The ids whose new events are dropped (deletion on request); undefined: none. */
  suppressions?: Pick<SuppressionList, 'suppressed' | 'mirror'>;
  suppressed: Counter;
  schemas: Pick<GatewaySchemas, 'apply'>;
}

/** `messages` without those of suppressed ids of `tenantId` (the same array when the tenant has none). */
export function withoutSuppressed(
  suppressions: Pick<SuppressionList, 'suppressed' | 'mirror'> | undefined,
  tenantId: string,
  messages: EventProducerMessage[],
): EventProducerMessage[] {
  // NOTE: a tenant without a suppression list (nearly all) costs one Map lookup; only a
  // tenant with one pays for reading its messages' ids back.
  if (!suppressions?.mirror.get(tenantId)) return messages;
  return messages.filter((m) => {
    const v = eventOf(m);
    return !suppressions.suppressed(tenantId, v.user_id, v.anonymous_id);
  });
}

export function createIntake(deps: IntakeDeps): Intake {
  return {
    authenticate(raw, req, res) {
      if (!raw) {
        throw new AppError('MISSING_CREDENTIALS', 'send the access key in X-Access-Key or the key query parameter');
      }
      const key = deps.keys.authenticate(raw, 'telemetry');
      const origin = req.headers.origin;
      if (key.allowedOrigins.size > 0 && (!origin || !key.allowedOrigins.has(origin))) {
        throw new AppError('ORIGIN_NOT_ALLOWED', 'this access key may not be used from this origin');
      }
      applyLimit(deps.limiter, key.keyId, res, 'too many requests for this access key');
      return key;
    },
    async publish(key, all) {
      // Schemas first, so that a refusal names the request's own event indexes.
      const checked = deps.schemas.apply(key.tenantId, all);
      const messages = withoutSuppressed(deps.suppressions, key.tenantId, checked);
      if (messages.length < all.length) deps.suppressed.inc(all.length - messages.length);
      if (messages.length === 0) return;
      // The key owns its messages in flight: one key cannot take all the room.
      await deps.publisher.send(deps.eventsTopic, messages, key.keyId);
      deps.accepted.inc(messages.length);
    },
  };
}
