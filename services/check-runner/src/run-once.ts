import { Counter, type Registry } from 'prom-client';
import type {
  RunCapability,
  RunOnceValidators,
  RunReplyMessage,
  RunReplyPayload,
  RunRequestMessage,
} from '@telemetry/contract';
import {
  KafkaMessageTooLargeError,
  systemClock,
  type Clock,
  type Component,
  type GroupConsumer,
  type GroupConsumerFactory,
  type Logger,
  type SecretBox,
} from '@telemetry/platform';
import { openRunRequest, runRequestExpired, sealRunReply, type StoredMonitor } from '@telemetry/store';
import { isPending } from './probes/heartbeat.js';
import type { ProbeContext, SlotResult } from './probes/index.js';
import { failed, findings, type ProbeResult } from './probes/verdict.js';

/**
 * The runner's side of "run once now" (docs/monitors.md, "Run once now"). Each runner
 * joins a consumer group of RUN_REQUESTS_TOPIC per location (`<RUNNER_GROUP_ID>.<location>.run`),
 * and one more per capability it has (`<RUNNER_GROUP_ID>.<location>.browser.run` for a
 * runner with Chromium). Every group reads every request once; in each group only the
 * member of the request's location acts, and only in the group of the request's capability
 * (none: the `.run` group): so exactly one capable runner of the location runs it, and a
 * runner without the capability never does. A request past its expiry is dropped (its
 * asker gave up). The check is the probe's alone: no confirmation, no state, nothing
 * published but the sealed reply.
 */

/**
 * What a runner can do beyond any check: browser checks when it has Chromium
 * (RUNNER_CHROMIUM_PATH, the browser module's setting; a runner config without it has none).
 */
export function runnerCapabilities(config: { location: string; chromiumPath?: string }): RunCapability[] {
  return config.chromiumPath ? ['browser'] : [];
}

/** The consumer group of run requests of `location` for `capability` (undefined: the checks any runner runs). */
export function runGroupId(groupId: string, location: string, capability?: RunCapability): string {
  return capability ? `${groupId}.${location}.${capability}.run` : `${groupId}.${location}.run`;
}

/** Whether the member of `capability`'s group (undefined: the plain group) of `location` acts on a request. */
export function actsOn(
  m: Pick<RunRequestMessage, 'location' | 'capability'>,
  location: string,
  capability: RunCapability | undefined,
): boolean {
  return m.location === location && m.capability === capability;
}

export interface RunOnceWorkerDeps {
  consumers: GroupConsumerFactory;
  /** RUN_REQUESTS_TOPIC. */
  topic: string;
  /** RUNNER_GROUP_ID. */
  groupId: string;
  /** RUNNER_LOCATION. */
  location: string;
  capabilities: readonly RunCapability[];
  box: SecretBox;
  validators: Pick<RunOnceValidators, 'requestMessage'>;
  /** Runs one check (the service binds the egress policy). */
  probe(m: StoredMonitor, ctx: Omit<ProbeContext, 'policy'>): Promise<SlotResult>;
  /** Publishes a reply to RUN_REPLIES_TOPIC; resolves once Kafka acknowledged. */
  reply(message: RunReplyMessage): Promise<void>;
  runnerId: string;
  maxBodyBytes: number;
  /** Runs at once on this runner; a request beyond waits for one to end. */
  maxConcurrent: number;
  sessionTimeoutMs: number;
  logger: Logger;
  registry: Registry;
  clock?: Clock;
}

/**
 * A browser check's failure screenshot, base64: the browser probe's result carries the PNG
 * beside it (`png`, as check.ts reads it for the screenshots topic).
 */
function screenshotOf(r: ProbeResult): string | undefined {
  const png = (r as ProbeResult & { png?: Buffer }).png;
  return png && png.length > 0 ? png.toString('base64') : undefined;
}

/** The sealed part of a reply: what the check found. */
export function replyPayload(r: ProbeResult, location: string): RunReplyPayload {
  const png = screenshotOf(r);
  return {
    ...findings(r),
    location,
    ...(png !== undefined ? { screenshot_png: png } : {}),
  };
}

export class RunOnceWorker implements Component {
  readonly name = 'run-once';
  // Scheduled checks go on without it.
  readonly essential = false;
  private readonly consumers: GroupConsumer[];
  private readonly clock: Clock;
  private readonly running = new Set<Promise<void>>();
  private readonly slotWaiters: (() => void)[] = [];
  private readonly handled: Counter<'outcome'>;

  constructor(private readonly deps: RunOnceWorkerDeps) {
    this.clock = deps.clock ?? systemClock;
    this.handled = new Counter({
      name: 'runner_run_once_total',
      help: 'Run-once requests this runner acted on, by outcome (replied, expired, unopened, unreplied)',
      labelNames: ['outcome'],
      registers: [deps.registry],
    });
    const groups: (RunCapability | undefined)[] = [undefined, ...deps.capabilities];
    this.consumers = groups.map((capability) =>
      deps.consumers({
        name: `run-once-consumer${capability ? `-${capability}` : ''}`,
        groupId: runGroupId(deps.groupId, deps.location, capability),
        topics: [deps.topic],
        // A new group reads what is still kept: requests sent while it joined are run,
        // older ones are past their expiry and dropped.
        fromBeginning: true,
        consumer: {
          sessionTimeout: deps.sessionTimeoutMs,
          heartbeatInterval: Math.max(500, Math.floor(deps.sessionTimeoutMs / 10)),
          maxWaitTimeInMs: 250,
          allowAutoTopicCreation: false,
        },
        eachMessage: (m) => this.onRequest(m.message.value ?? null, capability, () => m.heartbeat()),
        stallAfterMs: deps.sessionTimeoutMs,
        crashMessage: 'run-once consumer crashed',
      }),
    );
  }

  async start(): Promise<void> {
    await Promise.all(this.consumers.map((c) => c.start()));
  }

  async stop(): Promise<void> {
    // Stop taking requests, then let the runs in flight reply (each ends by its expiry).
    await Promise.all(this.consumers.map((c) => c.stop()));
    await Promise.allSettled([...this.running]);
  }

  health(): boolean {
    return this.consumers.every((c) => c.health());
  }

  /** A request read by the group of `capability`: run (in the background) when it is this member's. */
  async onRequest(
    value: Buffer | string | null,
    capability: RunCapability | undefined,
    heartbeat: () => Promise<void> = () => Promise.resolve(),
  ): Promise<void> {
    let m: unknown;
    try {
      m = JSON.parse(value?.toString() ?? 'null');
    } catch {
      return;
    }
    if (!this.deps.validators.requestMessage(m)) return;
    if (!actsOn(m, this.deps.location, capability)) return;
    if (runRequestExpired(m, this.clock.now())) {
      this.handled.inc({ outcome: 'expired' });
      return;
    }
    // Waits for a free slot: the partition's next request waits with it.
    await this.slot(heartbeat);
    const run = this.run(m).finally(() => {
      this.running.delete(run);
      this.slotWaiters.shift()?.();
    });
    this.running.add(run);
  }

  /** Runs in flight now. */
  inFlight(): number {
    return this.running.size;
  }

  /**
   * Waits for a free slot. NOTE: the group's loop waits with it, so the wait heartbeats
   * (a run may take a browser check's whole timeout, longer than the session timeout).
   */
  private async slot(heartbeat: () => Promise<void>): Promise<void> {
    const every = Math.max(200, Math.floor(this.deps.sessionTimeoutMs / 5));
    while (this.running.size >= this.deps.maxConcurrent) {
      let wake: (() => void) | undefined;
      const freed = new Promise<void>((resolve) => {
        wake = resolve;
        this.slotWaiters.push(resolve);
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([freed, new Promise<void>((resolve) => (timer = setTimeout(resolve, every)))]);
      clearTimeout(timer);
      const i = this.slotWaiters.indexOf(wake!);
      if (i >= 0) this.slotWaiters.splice(i, 1);
      await heartbeat().catch(() => undefined);
    }
  }

  private async run(m: RunRequestMessage): Promise<void> {
    const { deps } = this;
    let request;
    try {
      request = openRunRequest(deps.box, m);
    } catch (err) {
      this.handled.inc({ outcome: 'unopened' });
      deps.logger.warn('run-once request does not open; dropped', { run_id: m.id, err: String(err) });
      return;
    }
    const now = this.clock.now();
    const leftMs = Date.parse(m.expires_at) - now;
    if (leftMs <= 0) {
      this.handled.inc({ outcome: 'expired' });
      return;
    }
    const at = new Date(now).toISOString();
    const monitor: StoredMonitor = {
      tenant_id: m.tenant_id,
      id: request.monitor_id,
      key: null,
      ...request.settings,
      webhook_secret: '',
      created_at: at,
      updated_at: at,
      version: 0,
    };
    const slot = await deps.probe(monitor, {
      userAgent: `telemetry-check-runner/0.1 (+runner=${deps.runnerId}; location=${deps.location}; run-once)`,
      checkId: m.id,
      monitorId: monitor.id,
      maxBodyBytes: deps.maxBodyBytes,
      // Its asker stops waiting at the expiry.
      signal: AbortSignal.timeout(leftMs),
    });
    // A heartbeat monitor (the API refuses them) has no check of its own to show.
    const result: ProbeResult = isPending(slot) ? failed('heartbeat_missing', 0) : slot;
    const payload = replyPayload(result, deps.location);
    try {
      try {
        await deps.reply(sealRunReply(deps.box, m.id, deps.runnerId, payload));
      } catch (err) {
        // A screenshot near the size limit, sealed, may pass the broker's message.max.bytes:
        // the answer goes without it rather than not at all.
        if (!(err instanceof KafkaMessageTooLargeError) || payload.screenshot_png === undefined) throw err;
        const { screenshot_png: _png, ...smaller } = payload;
        await deps.reply(sealRunReply(deps.box, m.id, deps.runnerId, smaller));
      }
      this.handled.inc({ outcome: 'replied' });
    } catch (err) {
      this.handled.inc({ outcome: 'unreplied' });
      deps.logger.warn('run-once reply not published', { run_id: m.id, err: String(err) });
    }
    deps.logger.info('run once', {
      run_id: m.id,
      tenant_id: m.tenant_id,
      monitor_id: monitor.id,
      type: monitor.type,
      status: result.status,
    });
  }
}
