import { createHash } from 'node:crypto';
import { HttpCallError } from '@telemetry/platform';
import { originOf } from '@telemetry/store';
import type { Answer, ChannelContext, Verdict } from './channel.js';

/**
 * What every HTTP channel shares: one POST (or other method) through the runner's
 * egress-bound client, no redirects followed, the provider's answer as an Answer (its
 * status, the start of its body for the test endpoint and a bad request's reason, and a
 * 429's or 503's Retry-After), and the usual judgement of it.
 */

/** Bytes of a provider's answer kept (the test endpoint shows them; records never hold them). */
export const RESPONSE_BYTES = 1024;

/** A `Retry-After` (delay-seconds or an HTTP date) in ms from `now`; undefined when absent or unreadable. */
export function retryAfterMs(headers: Record<string, string | string[] | undefined>, now: number): number | undefined {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Math.min(Number(value), 3600) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.min(Math.max(0, at - now), 3_600_000);
}

export interface HttpRequest {
  url: string;
  method?: string;
  /** Content-Type and User-Agent are added (JSON unless given). */
  headers?: Record<string, string>;
  body: string;
}

/** Sends `req`; never throws (no answer: statusCode 0 and the error's kind). */
export async function sendHttp(req: HttpRequest, ctx: ChannelContext): Promise<Answer> {
  try {
    const answer = await ctx.http({
      url: req.url,
      method: req.method ?? 'POST',
      headers: { 'Content-Type': 'application/json', 'User-Agent': ctx.userAgent, ...req.headers },
      body: req.body,
      timeoutMs: ctx.timeoutMs,
      maxRedirects: 0,
      maxBodyBytes: 64 * 1024,
      keepBytes: RESPONSE_BYTES,
    });
    const wait =
      answer.statusCode === 429 || answer.statusCode === 503 ? retryAfterMs(answer.headers, ctx.now()) : undefined;
    return {
      statusCode: answer.statusCode,
      response: answer.body.toString('utf8'),
      ...(wait === undefined ? {} : { retryAfterMs: wait }),
    };
  } catch (err) {
    return { statusCode: 0, error: err instanceof HttpCallError ? err.kind : 'network', detail: String(err) };
  }
}

/** An attempt's answer: retry it, or not (408, 425, 429 and 5xx are worth another attempt). */
export function retriable(statusCode: number): boolean {
  return statusCode === 408 || statusCode === 425 || statusCode === 429 || statusCode >= 500;
}

/** The usual judgement: 2xx delivered; refused by the egress policy or a 4xx given up at once; the rest retried. */
export function classifyHttp(a: Answer): Verdict {
  if (a.error === undefined && a.statusCode >= 200 && a.statusCode < 300) return 'delivered';
  // Refused before anything was sent: another attempt would be refused too.
  if (a.error === 'target_not_allowed') return 'give_up';
  if (a.error !== undefined) return 'retry';
  return retriable(a.statusCode) ? 'retry' : 'give_up';
}

/**
 * The queue of one destination: its origin and a digest of the whole URL and the
 * credentials it is sent with (never the secrets themselves). Each tenant's webhook,
 * routing key or API key is its own queue, so one tenant's rate limit or dead endpoint on
 * a shared provider host delays nobody else's.
 */
export function endpointOf(url: string, ...credentials: string[]): string {
  const digest = createHash('sha256')
    .update([url, ...credentials].join('\u0000'))
    .digest('hex')
    .slice(0, 16);
  return `${originOf(url)} ${digest}`;
}
