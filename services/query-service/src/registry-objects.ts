import type { Request, Response } from 'express';
import { toIsoSeconds, type Problem } from '@telemetry/contract';
import { AppError, entityTags, readJsonBody } from '@telemetry/platform';
import type { VerifiedKey } from '@telemetry/store';

/**
 * What the routes of the registry's versioned objects (monitors, alert channels,
 * escalation policies) share: ETags of versions, If-Match, bodies, and the key's tenant.
 */

/** An object's ETag: its version, quoted. */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/**
 * `If-Match` (RFC 9110 13.1.1): absent or `*` passes; otherwise one of its entity tags
 * must be the object's current one, else 412 PRECONDITION_FAILED and nothing changes.
 */
export function checkIfMatch(req: Request, version: number, what: string): void {
  const tags = entityTags(req.get('if-match'));
  if (tags === undefined || tags === '*') return;
  if (!tags.includes(etagOf(version))) {
    throw new AppError(
      'PRECONDITION_FAILED',
      `the ${what} is at version ${etagOf(version)}, not ${req.get('if-match')!.trim()}; read it again and retry`,
    );
  }
}

/** Whether the request named a version (If-Match other than `*`): then a lost race is 412, not retried. */
export function namesVersion(req: Request): boolean {
  const tags = entityTags(req.get('if-match'));
  return tags !== undefined && tags !== '*';
}

const BODY_LIMITS = { maxBytes: 256 * 1024, maxRatio: 100 };
const MAX_JSON_DEPTH = 8;

export function jsonBody(req: Request): Promise<unknown> {
  return readJsonBody(req, BODY_LIMITS, MAX_JSON_DEPTH);
}

/** 400 VALIDATION_FAILED naming the first problem, with all of them in `details.problems`. */
export function invalid(what: string, problems: Problem[]): AppError {
  return new AppError('VALIDATION_FAILED', `the ${what} is not valid: ${problems[0]?.path} ${problems[0]?.message}`, {
    problems,
  });
}

export function keyOf(res: Response): VerifiedKey {
  return res.locals.key as VerifiedKey;
}

/** A key limited to some monitors reads tenant-wide objects but changes none. */
export function refuseLimited(res: Response, what: string): void {
  if (keyOf(res).monitorIds.size > 0) {
    throw new AppError('MONITOR_NOT_ALLOWED', `this API key is limited to some monitors and may not change ${what}`);
  }
}

export function nowIso(): string {
  return toIsoSeconds(Math.floor(Date.now() / 1000));
}

/**
 * A read-modify-write of a versioned object: `write` stores the next state computed from
 * the current one only if the object is still at the version read (an UPDATE … WHERE
 * version = $n, atomic across replicas), else answers undefined. With If-Match, an object
 * that moved on answers 412; without, the change is computed again from the newer state.
 */
export async function conditionally<C extends { version: number }, T>(
  req: Request,
  what: string,
  load: () => Promise<C>,
  write: (current: C) => Promise<T | undefined>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const current = await load();
    checkIfMatch(req, current.version, what);
    const done = await write(current);
    if (done !== undefined) return done;
    if (namesVersion(req) || attempt >= 4) {
      throw new AppError(
        'PRECONDITION_FAILED',
        `the ${what} changed while this request was handled; read it again and retry`,
      );
    }
  }
}
