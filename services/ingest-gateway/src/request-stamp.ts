import type { IncomingHttpHeaders } from 'node:http';
import { LIMITS, PRINTABLE_PATTERN, type EventMessage, type IpStorage } from '@telemetry/contract';

/**
 * What the gateway adds to every event message of one request (docs/enrichment.md): the
 * request's client address and User-Agent header, and the key's `ip_storage` when it is not
 * the default. Computed once per request (stampOf), copied onto each message (stamp).
 */
export type RequestStamp = Pick<EventMessage, 'request_ip' | 'request_user_agent' | 'ip_storage'>;

/** What a stamp is made of: an Express request, or the client address (clientIp) and headers of a plain one. */
export interface StampSource {
  readonly ip?: string | undefined;
  readonly headers: IncomingHttpHeaders;
}

/** No request behind the messages (benchmarks, tools). */
export const NO_STAMP: RequestStamp = Object.freeze({});

const PRINTABLE = new RegExp(PRINTABLE_PATTERN);
/** The message schema's address pattern (an IP literal as normalizeIp writes it). */
const IP_TEXT = /^[0-9a-f:.]{2,45}$/;

/**
 * The stamp of `req` sent with a key keeping `ipStorage`: `request_ip` is `req.ip` (the
 * peer, or X-Forwarded-For's client through TRUSTED_PROXIES, normalised by beginApp);
 * `request_user_agent` the User-Agent header when it is 1 to maxUserAgentLength characters
 * without control characters, else absent (a longer or binary one is not cut: it is not
 * what a browser sends, and half of one would misparse).
 */
export function stampOf(req: StampSource, ipStorage: IpStorage): RequestStamp {
  const stamp: RequestStamp = {};
  const ip = req.ip;
  if (ip !== undefined && IP_TEXT.test(ip)) stamp.request_ip = ip;
  // NOTE: Node reads header bytes as latin1, one character each: length counts what the schema's maxLength does.
  const ua = req.headers['user-agent'];
  if (ua !== undefined && ua !== '' && ua.length <= LIMITS.maxUserAgentLength && PRINTABLE.test(ua)) {
    stamp.request_user_agent = ua;
  }
  // Absent means truncated: the default costs no bytes on the topic.
  if (ipStorage !== 'truncated') stamp.ip_storage = ipStorage;
  return stamp;
}

/** Copies `s` onto `msg`. */
export function stamp(msg: EventMessage, s: RequestStamp): void {
  if (s.request_ip !== undefined) msg.request_ip = s.request_ip;
  if (s.request_user_agent !== undefined) msg.request_user_agent = s.request_user_agent;
  if (s.ip_storage !== undefined) msg.ip_storage = s.ip_storage;
}
