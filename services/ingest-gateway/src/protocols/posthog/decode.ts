import type { Request } from 'express';
import { AppError, gunzipWithin, parseBody, readBody, single, type BodyLimits } from '@telemetry/platform';

/** The `compression` query values we decode; posthog-js also knows `lz64`, which it never picks unless told to. */
const COMPRESSIONS = new Set(['', 'gzip', 'gzip-js', 'base64']);
const BASE64 = /^[A-Za-z0-9+/=_\s-]*$/;

/** A PostHog request's body as the SDKs send it (docs/compat.md, "PostHog"), decoded to its JSON value. */
export async function readPosthogBody(req: Request, limits: BodyLimits): Promise<unknown> {
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Encoding must be identity or gzip');
  }
  const compression = single(req, 'compression');
  if (!COMPRESSIONS.has(compression ?? '')) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'compression must be gzip-js, gzip or base64');
  }
  // readBody enforces the byte limit and inflates a `Content-Encoding: gzip` body.
  const raw = await readBody(req, limits);
  return decodePosthogBody(raw, req.get('content-type'), compression, limits);
}

/**
 * The JSON value of a body already read: gzip by its magic bytes (posthog-js's `gzip-js`
 * drops the `compression` parameter and sets no Content-Encoding), then the `data=` form
 * (sendBeacon, `compression=base64`) whose value is JSON or base64, or base64 as a whole.
 * Every step only shrinks what readBody admitted, and gzip keeps readBody's caps.
 */
export function decodePosthogBody(
  raw: Buffer,
  contentType: string | undefined,
  compression: string | undefined,
  limits: BodyLimits,
): unknown {
  let body = raw;
  if (body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b) body = gunzipWithin(body, limits);
  else if (compression === 'gzip' || compression === 'gzip-js') {
    throw new AppError('INVALID_JSON', `compression=${compression} but the body is not gzip`);
  }
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded' || body.subarray(0, 5).toString('latin1') === 'data=') {
    const data = new URLSearchParams(body.toString('utf8')).get('data');
    if (data === null) {
      throw new AppError('VALIDATION_FAILED', 'a form body needs its events in the data field', {
        problems: [{ path: '/data', message: 'is required' }],
      });
    }
    // NOTE: a form turns `+` into a space; base64 has no spaces, so they were `+`.
    body =
      compression === 'base64' || !/^\s*[[{]/.test(data)
        ? fromBase64(data.replace(/ /g, '+'))
        : Buffer.from(data, 'utf8');
  } else if (compression === 'base64') {
    body = fromBase64(body.toString('latin1'));
  }
  if (body.length === 0) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
  return parseBody(body);
}

function fromBase64(text: string): Buffer {
  if (!BASE64.test(text)) throw new AppError('INVALID_JSON', 'the body is not valid base64');
  return Buffer.from(text, 'base64');
}
