import { Counter, type Registry } from 'prom-client';
import type { RunOnceValidators, RunReplyPayload, RunRequestMessage, RunRequestPayload } from '@telemetry/contract';
import { systemClock, TopicReader, type Clock, type Component, type Logger, type SecretBox } from '@telemetry/platform';
import { openRunReply, sealRunRequest, type RunRequestEnvelope } from '@telemetry/store';

export interface RunOnceClientDeps {
  /** Publishes a request to RUN_REQUESTS_TOPIC; resolves once Kafka acknowledged. */
  send(message: RunRequestMessage): Promise<void>;
  box: SecretBox;
  validators: Pick<RunOnceValidators, 'replyMessage' | 'replyPayload'>;
  brokers: string[];
  clientId: string;
  /** RUN_REPLIES_TOPIC. */
  topic: string;
  /** A group the reader names but never joins (TopicReader needs one). */
  groupId: string;
  logger: Logger;
  registry: Registry;
  clock?: Clock;
}

interface Waiting {
  resolve(reply: RunReplyPayload | undefined): void;
}

/**
 * The query service's side of "run once now" (docs/monitors.md, "Run once now"): sends a
 * sealed request to the runners and waits for the reply with its id. Every replica reads
 * the whole replies topic from its end as it was at start (a broadcast TopicReader, no
 * group): a reply to a request of another replica is not waited for here and is ignored.
 */
export class RunOnceClient implements Component {
  readonly name = 'run-once-replies';
  // Checks go on without it: only "run once now" answers 504 while it is away.
  readonly essential = false;
  private readonly reader: TopicReader;
  private readonly waiting = new Map<string, Waiting>();
  private positioned = false;
  private readonly clock: Clock;
  private readonly outcomes: Counter<'outcome'>;

  constructor(private readonly deps: RunOnceClientDeps) {
    this.clock = deps.clock ?? systemClock;
    this.outcomes = new Counter({
      name: 'query_run_once_total',
      help: 'Run-once requests by outcome (answered, timeout, unsent)',
      labelNames: ['outcome'],
      registers: [deps.registry],
    });
    this.reader = new TopicReader({
      brokers: deps.brokers,
      clientId: deps.clientId,
      topic: deps.topic,
      groupId: deps.groupId,
      logger: deps.logger,
      // Only replies from now on: a request sent before this replica started is not ours.
      startAt: (reader) => reader.latestOffsets(),
      onStart: () => {
        this.positioned = true;
      },
      onRecords: (_partition, records) => {
        for (const r of records) this.onReply(r.value);
      },
      maxWaitMs: 200,
      clock: this.clock,
    });
  }

  start(): Promise<void> {
    return this.reader.start();
  }

  async stop(): Promise<void> {
    for (const w of this.waiting.values()) w.resolve(undefined);
    this.waiting.clear();
    await this.reader.stop();
  }

  health(): boolean {
    return this.reader.health();
  }

  /**
   * Sends the request and resolves with the runner's reply, or undefined when none came
   * before `expires_at`. A send Kafka did not acknowledge throws (503 KAFKA_UNAVAILABLE).
   */
  async ask(envelope: RunRequestEnvelope, payload: RunRequestPayload): Promise<RunReplyPayload | undefined> {
    const deadline = Date.parse(envelope.expires_at);
    // A reply can only be read once the reader knows where the topic ends.
    while (!this.positioned) {
      if (this.clock.now() >= deadline) return this.timedOut();
      await new Promise((r) => setTimeout(r, 50));
    }
    const reply = new Promise<RunReplyPayload | undefined>((resolve) => {
      this.waiting.set(envelope.id, { resolve });
    });
    const timer = setTimeout(() => this.settle(envelope.id, undefined), Math.max(0, deadline - this.clock.now()));
    try {
      await this.deps.send(sealRunRequest(this.deps.box, envelope, payload));
    } catch (err) {
      clearTimeout(timer);
      this.waiting.delete(envelope.id);
      this.outcomes.inc({ outcome: 'unsent' });
      throw err;
    }
    const got = await reply;
    clearTimeout(timer);
    if (got === undefined) return this.timedOut();
    this.outcomes.inc({ outcome: 'answered' });
    return got;
  }

  /** Requests waiting for a reply now. */
  pending(): number {
    return this.waiting.size;
  }

  private timedOut(): undefined {
    this.outcomes.inc({ outcome: 'timeout' });
    return undefined;
  }

  private settle(id: string, reply: RunReplyPayload | undefined): void {
    const w = this.waiting.get(id);
    if (!w) return;
    this.waiting.delete(id);
    w.resolve(reply);
  }

  /** A record of the replies topic: the reply of a request waiting here, or nothing of ours. */
  private onReply(value: Buffer | null): void {
    let message: unknown;
    try {
      message = JSON.parse(value?.toString('utf8') ?? 'null');
    } catch {
      return;
    }
    if (!this.deps.validators.replyMessage(message)) return;
    // Another replica's request (or one given up on): not ours to open.
    if (!this.waiting.has(message.id)) return;
    let payload: unknown;
    try {
      payload = openRunReply(this.deps.box, message);
    } catch (err) {
      this.deps.logger.warn('run-once reply does not open; ignored', { id: message.id, err: String(err) });
      return;
    }
    if (!this.deps.validators.replyPayload(payload)) {
      this.deps.logger.warn('run-once reply is not valid; ignored', { id: message.id });
      return;
    }
    this.settle(message.id, payload);
  }
}
