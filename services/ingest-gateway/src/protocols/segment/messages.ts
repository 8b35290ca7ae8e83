import { AppError } from '@telemetry/platform';
import { validationFailed, type CompatEvent, type CompatProblem } from '../compat.js';

/**
 * Segment's documented limits (https://segment.com/docs/connections/sources/catalog/libraries/server/http-api/,
 * "Max Request Size"): 32 KB per message, 500 KB per batch request, both answered 400.
 * KB is 1024 bytes, as Segment's own clients count (analytics-node: `MAX_EVENT_SIZE_IN_KB * 1024`;
 * segment-analytics-python: `32 << 10`).
 */
export const SEGMENT_LIMITS = {
  /** One message as the client serialised it (its bytes in the request). */
  maxMessageBytes: 32 * 1024,
  /** One request's body (after gzip). */
  maxBatchBytes: 500 * 1024,
} as const;

export const SEGMENT_TYPES = ['track', 'identify', 'page', 'screen', 'group', 'alias'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function present(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}

/** One message of a request, with what the request around it says. */
export interface SegmentInput {
  message: unknown;
  /** The type the path implies (`/v1/track`, `/v1/t`); undefined in a batch (the message's own `type`). */
  pathType?: SegmentType;
  /** The message's bytes as the client serialised them. */
  bytes: number;
  /** JSON pointer of the message in the request (`/batch/3`, or `` for a single one). */
  path: string;
}

/** What a batch request says for all its messages: Segment merges it into each. */
export interface BatchLevel {
  sentAt?: unknown;
  context?: unknown;
  integrations?: unknown;
}

/**
 * The write key of a request: the HTTP Basic user name (the password empty), `writeKey`
 * in the body, and `writeKey` in each message (analytics.js's batching puts it there);
 * all that are present must be one key. undefined: none was sent.
 */
export function segmentWriteKey(authorization: string | undefined, candidates: unknown[]): string | undefined {
  const keys = new Set<string>();
  if (authorization !== undefined && authorization.trim() !== '') {
    const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(authorization.trim());
    if (!m) throw new AppError('INVALID_CREDENTIALS', 'send the write key as the HTTP Basic user name');
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon < 0 ? decoded : decoded.slice(0, colon);
    if (colon >= 0 && decoded.slice(colon + 1) !== '') {
      throw new AppError(
        'INVALID_CREDENTIALS',
        'the write key is the HTTP Basic user name; the password must be empty',
      );
    }
    if (user === '') throw new AppError('INVALID_CREDENTIALS', 'the HTTP Basic user name (the write key) is empty');
    keys.add(user);
  }
  for (const k of candidates) {
    if (k === undefined || k === null) continue;
    if (typeof k !== 'string' || k === '') throw new AppError('INVALID_CREDENTIALS', 'writeKey must be a write key');
    keys.add(k);
  }
  if (keys.size > 1) {
    throw new AppError('INVALID_CREDENTIALS', 'the request carries different write keys; send one');
  }
  return keys.values().next().value;
}

/** `base` with `own` over it (one level): how Segment merges a batch's context and integrations into a message's. */
function merged(base: unknown, own: unknown): unknown {
  if (!isObject(base)) return own;
  return isObject(own) ? { ...base, ...own } : own === undefined ? { ...base } : own;
}

/**
 * The problems Segment itself refuses a message for (its "Errors" section): not an object,
 * an unknown type, no userId nor anonymousId, a track without `event`, an alias without
 * `previousId` or `userId`, a group without `groupId`, over 32 KB. Pushes them to `problems`.
 */
function problemsOf(input: SegmentInput, index: number, problems: CompatProblem[]): SegmentType | undefined {
  const { message, path } = input;
  const problem = (field: string, text: string): void => {
    problems.push({ index, path: `${path}${field}`, message: text });
  };
  if (!isObject(message)) {
    problem('', 'must be a Segment message (a JSON object)');
    return undefined;
  }
  const type = input.pathType ?? message.type;
  if (!(SEGMENT_TYPES as readonly unknown[]).includes(type)) {
    problem('/type', `must be one of ${SEGMENT_TYPES.join(', ')}`);
    return undefined;
  }
  if (input.pathType !== undefined && message.type !== undefined && message.type !== input.pathType) {
    problem('/type', `must be ${input.pathType} (or absent) on this path`);
  }
  const t = type as SegmentType;
  if (!present(message.userId) && !present(message.anonymousId)) {
    problem('/userId', 'a message needs userId or anonymousId');
  }
  if (t === 'track' && !present(message.event)) problem('/event', 'a track message needs event');
  if (t === 'alias') {
    if (!present(message.previousId)) problem('/previousId', 'an alias message needs previousId');
    if (!present(message.userId)) problem('/userId', 'an alias message needs userId');
  }
  if (t === 'group' && !present(message.groupId)) problem('/groupId', 'a group message needs groupId');
  return t;
}

/**
 * The CompatEvents of a request's messages (docs/compat.md, "Segment"), all or nothing:
 * VALIDATION_FAILED lists every message Segment would refuse; EVENT_TOO_LARGE names a
 * message over 32 KB. The payload is the message as sent, with the batch's context and
 * integrations merged under its own, and without `writeKey` (a credential is not data).
 */
export function segmentEvents(inputs: readonly SegmentInput[], batch: BatchLevel): CompatEvent[] {
  const problems: CompatProblem[] = [];
  const events: CompatEvent[] = [];
  inputs.forEach((input, index) => {
    if (input.bytes > SEGMENT_LIMITS.maxMessageBytes) {
      throw new AppError(
        'EVENT_TOO_LARGE',
        `message ${index} is larger than Segment's ${SEGMENT_LIMITS.maxMessageBytes} bytes`,
        { limit: 'segmentMaxMessageBytes', max: SEGMENT_LIMITS.maxMessageBytes, invalid_events: [index] },
      );
    }
    const type = problemsOf(input, index, problems);
    if (type === undefined || !isObject(input.message)) return;
    const { writeKey: _credential, ...own } = input.message;
    const payload: Json = { ...own };
    const context = merged(batch.context, own.context);
    if (context !== undefined) payload.context = context;
    const integrations = merged(batch.integrations, own.integrations);
    if (integrations !== undefined) payload.integrations = integrations;
    if (input.pathType !== undefined && payload.type === undefined) payload.type = type;
    const ctx = isObject(context) ? context : {};
    const library = isObject(ctx.library) ? ctx.library.name : undefined;
    events.push({
      protocol: 'segment',
      clientId: own.messageId,
      category: type === 'track' ? own.event : type,
      library,
      payload,
      timestamp: present(own.originalTimestamp) ? own.originalTimestamp : own.timestamp,
      sentAt: present(own.sentAt) ? own.sentAt : batch.sentAt,
      anonymousId: own.anonymousId,
      userId: own.userId,
      clientIp: ctx.ip,
      addressAt: ['context', 'ip'],
      userAgent: ctx.userAgent,
    });
  });
  if (problems.length > 0) throw validationFailed(problems);
  return events;
}
