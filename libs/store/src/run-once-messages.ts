import { randomBytes } from 'node:crypto';
import type { RunReplyMessage, RunReplyPayload, RunRequestMessage, RunRequestPayload } from '@telemetry/contract';
import type { SecretBox } from '@telemetry/platform';

/**
 * The messages of "run once now" (docs/monitors.md, "Run once now"), sealed with
 * SECRETS_KEYS: a request carries a monitor's settings with its secrets in the clear, a
 * reply what the check saw (a browser check's screenshot shows the page). A request's
 * payload is bound to every field of its envelope (id, tenant, location, capability,
 * expiry), a reply's to the request's id: a payload copied into another message, or a
 * message whose expiry or location was altered, does not open.
 */

/** A run request's id: `run_` and 24 hex digits (unguessable: a reply is matched by it). */
export function newRunId(): string {
  return `run_${randomBytes(12).toString('hex')}`;
}

/** A run request's envelope: the message's fields but its sealed payload. */
export type RunRequestEnvelope = Omit<RunRequestMessage, 'sealed'>;

function requestContext(e: RunRequestEnvelope): string {
  return ['run-request', e.id, e.tenant_id, e.location, e.capability ?? '', e.expires_at].join('|');
}

function replyContext(id: string): string {
  return `run-reply|${id}`;
}

/** A request message: the envelope, and the payload sealed to it. */
export function sealRunRequest(box: SecretBox, e: RunRequestEnvelope, payload: RunRequestPayload): RunRequestMessage {
  return { ...e, sealed: box.seal(JSON.stringify(payload), requestContext(e)) };
}

/** The payload of a request message (throws when it was sealed for another envelope or key). */
export function openRunRequest(box: SecretBox, m: RunRequestMessage): RunRequestPayload {
  const { sealed, ...e } = m;
  return JSON.parse(box.open(sealed, requestContext(e))) as RunRequestPayload;
}

/** Whether a request is past its expiry at `nowMs` (no runner acts on it any more: its asker gave up). */
export function runRequestExpired(m: Pick<RunRequestMessage, 'expires_at'>, nowMs: number): boolean {
  const at = Date.parse(m.expires_at);
  return !Number.isFinite(at) || at <= nowMs;
}

/** A reply message to request `id`, by `runner`. */
export function sealRunReply(box: SecretBox, id: string, runner: string, payload: RunReplyPayload): RunReplyMessage {
  return {
    id,
    runner,
    created_at: new Date().toISOString(),
    sealed: box.seal(JSON.stringify(payload), replyContext(id)),
  };
}

/** The payload of a reply message (throws when it was not sealed for this id). */
export function openRunReply(box: SecretBox, m: RunReplyMessage): unknown {
  return JSON.parse(box.open(m.sealed, replyContext(m.id))) as unknown;
}
