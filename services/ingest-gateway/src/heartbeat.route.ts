import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { Counter, type Registry } from 'prom-client';
import { ok, type CheckMessage } from '@telemetry/contract';
import { AppError, methodNotAllowed, type FairPublisher } from '@telemetry/platform';
import type { HeartbeatTokens } from '@telemetry/store';
import { applyLimit, RateLimiter } from './rate-limit.js';

export const HEARTBEAT_ROUTE = '/api/heartbeats/:token';

/** A monitor's calls: 10 at once, then one a second (a job calls once per interval). */
export const HEARTBEAT_RATE = { perSecond: 1, burst: 10 } as const;

export interface HeartbeatDeps {
  /** HEARTBEAT_KEY ('' : every token is refused). */
  key: string;
  /** The copy of the heartbeat nonces: a deleted monitor's or a replaced token is refused. */
  tokens: Pick<HeartbeatTokens, 'verify'>;
  publisher: FairPublisher;
  checksTopic: string;
  registry: Registry;
}

/**
 * POST /api/heartbeats/{token} (docs/monitors.md, "Heartbeat monitors"): a monitored job
 * says it ran. The call is stored as an `up` check of its monitor (Kafka acknowledges it
 * before the 200); the runner that watches the monitor finds the newest and opens an
 * incident when none came within interval_seconds + heartbeat_grace_seconds. The body,
 * if any, is not read.
 */
export function heartbeatRoute(app: Express, deps: HeartbeatDeps): void {
  const received = new Counter({
    name: 'ingest_heartbeats_total',
    help: 'Heartbeat calls acknowledged by Kafka and answered 200',
    registers: [deps.registry],
  });
  const limiter = new RateLimiter(HEARTBEAT_RATE.perSecond, HEARTBEAT_RATE.burst);
  app.post(HEARTBEAT_ROUTE, async (req, res) => {
    const monitor = deps.tokens.verify(deps.key, req.params.token ?? '');
    if (!monitor) throw new AppError('HEARTBEAT_NOT_FOUND', 'no heartbeat monitor has this token');
    applyLimit(limiter, monitor.monitorId, res, 'too many heartbeats for this monitor');
    const check: CheckMessage = {
      id: `chk_${randomBytes(12).toString('hex')}`,
      monitor_id: monitor.monitorId,
      tenant_id: monitor.tenantId,
      status: 'up',
      response_time: 0,
      status_code: 0,
      created_at: new Date().toISOString(),
    };
    await deps.publisher.send(
      deps.checksTopic,
      [{ key: check.monitor_id, value: JSON.stringify(check) }],
      check.monitor_id,
    );
    received.inc();
    res.status(200).json(ok(null));
  });
  methodNotAllowed(app, HEARTBEAT_ROUTE, ['POST']);
}
