import type { ChannelType, ChannelValidators, CheckError, Problem } from '@telemetry/contract';
import type { HttpAnswer, HttpCall } from '@telemetry/platform';
import type { Mailer } from '../mail.js';
import type { Notification } from '../notification.js';
import type { Templates } from '../templates.js';

/** The runner's HTTP client, bound to its egress policy: every connection a channel makes is judged by it. */
export type ChannelHttp = (call: Omit<HttpCall, 'policy'>) => Promise<HttpAnswer>;

/** What a channel's send is given by the dispatcher: it reaches nothing else. */
export interface ChannelContext {
  http: ChannelHttp;
  /** Sends mail: through the operator's SMTP_URL, or a tenant's own server through the egress policy. */
  mail: Mailer;
  /** The runner's User-Agent. */
  userAgent: string;
  /** One attempt fails after this long (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /**
   * Aborted when the runner stops. NOTE: for waits of the channel's own; a request in
   * flight is left to finish within timeoutMs, so that its record tells what happened
   * (a last attempt cut short would be recorded `failed` and never delivered again).
   */
  signal: AbortSignal;
  /** The wall clock, in ms since the epoch. */
  now: () => number;
}

/** What a channel's render is given besides the notification and the config. */
export interface RenderContext {
  /** The channel's own templates (absent ones: the defaults). */
  templates: Templates;
  /** The channel's name (a chat channel's acknowledge links name it as their recipient). */
  name: string;
  /** The wall clock at this attempt, ms. */
  now: number;
}

/** What one attempt got: the endpoint's status (0: no answer) and, without an answer, why. */
export interface Answer {
  statusCode: number;
  error?: CheckError;
  /** For log lines only (never in a record): what went wrong, in words. */
  detail?: string;
  /** A 429's or 503's `Retry-After`, in ms: the next attempt waits at least this long. */
  retryAfterMs?: number;
  /** The start of the provider's answer (at most 1 KB, secrets never echoed by providers): the test endpoint shows it. */
  response?: string;
}

/** What an answer means: delivered, worth another attempt later, or given up now. */
export type Verdict = 'delivered' | 'retry' | 'give_up';

/**
 * One alert channel (channels/<type>.ts): what a target of its type is sent and what the
 * answer means. The dispatcher (services/check-runner/src/dispatcher.ts) does the rest
 * (queues, grouping, retries, records, commits) the same way for every channel. `R` is
 * the channel's rendered notification.
 */
export interface Channel<C, R = unknown> {
  readonly type: ChannelType;
  /**
   * True: several notifications due at once may go as one message (chat, email). False:
   * each goes alone (paging, whose incidents are keyed by ours; webhooks, read by machines).
   */
  readonly groups: boolean;
  /**
   * True for paging services (PagerDuty, Opsgenie): each incident is theirs too, keyed by
   * our incident id, so they are always sent the resolve (whatever send_resolved says) and
   * our acknowledgements (`acknowledged`), and never grouped.
   */
  readonly paging: boolean;
  /**
   * Problems of a config, with the contract's compiled schemas (createChannelValidators,
   * built once in a composition root): the API validates with the same.
   */
  validate(config: unknown, validators: ChannelValidators): Problem[];
  /** Deliveries with the same endpoint go one at a time, in order; others never wait for them. */
  endpoint(config: C): string;
  /** The target as the delivery log and log lines show it: no secret in it. */
  shown(config: C): string;
  /** The notification as attempt `n.attempt` sends it. Pure. */
  render(n: Notification, config: C, ctx: RenderContext): R;
  /** Sends it; never throws (a failure is an Answer with `error`). */
  send(rendered: R, config: C, ctx: ChannelContext): Promise<Answer>;
  /** Pure. The dispatcher gives up a `retry` after the last allowed attempt. */
  classify(answer: Answer): Verdict;
}
