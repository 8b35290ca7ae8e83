import { gunzipSync } from 'node:zlib';
import type { Request } from 'express';
import { LIMITS } from '@telemetry/contract';
import { AppError } from './errors.js';

export interface BodyLimits {
  /** Bytes on the wire and, for gzip, after decompression. */
  maxBytes: number;
  /** Largest decompressed/compressed ratio accepted for gzip bodies (zip bombs). */
  maxRatio: number;
}

function tooLarge(limit: string, max: number, message: string): AppError {
  // Close the connection rather than read (and discard) the rest of a huge body.
  return new AppError('PAYLOAD_TOO_LARGE', message, { limit, max }, { Connection: 'close' });
}

/**
 * Reads the request body with hard limits: a declared or actual size over `maxBytes`
 * stops reading at once; gzip is inflated with an output cap and a ratio cap.
 */
export async function readBody(req: Request, limits: BodyLimits): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limits.maxBytes) {
    throw tooLarge('maxBodyBytes', limits.maxBytes, `body is larger than ${limits.maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limits.maxBytes) {
      throw tooLarge('maxBodyBytes', limits.maxBytes, `body is larger than ${limits.maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'gzip') return raw;
  let inflated: Buffer;
  try {
    inflated = gunzipSync(raw, { maxOutputLength: limits.maxBytes });
  } catch (err) {
    if (err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw tooLarge('maxBodyBytes', limits.maxBytes, `decompressed body is larger than ${limits.maxBytes} bytes`);
    }
    throw new AppError('INVALID_JSON', 'the body is not valid gzip');
  }
  if (inflated.length > raw.length * limits.maxRatio) {
    throw tooLarge('maxCompressionRatio', limits.maxRatio, `gzip compression ratio is above ${limits.maxRatio}`);
  }
  return inflated;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Parses a request body: strict UTF-8, JSON, bounded nesting depth. */
export function parseBody(body: Buffer, maxDepth: number = LIMITS.maxJsonDepth): unknown {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new AppError('INVALID_JSON', 'the body is not valid UTF-8');
  }
  if (!withinDepth(text, maxDepth)) {
    throw new AppError('VALIDATION_FAILED', `JSON nesting is deeper than ${maxDepth}`, {
      limit: 'maxJsonDepth',
      max: maxDepth,
    });
  }
  try {
    // NOTE: JSON.parse makes "__proto__" an own data property; it never touches a
    // prototype, and we never merge parsed objects into others.
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new AppError('INVALID_JSON', `the body is not valid JSON: ${(err as Error).message}`);
  }
}

/** Checks nesting depth on the raw text before parsing (cheap, and no deep recursion). */
export function withinDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max) return false;
    } else if (c === 125 || c === 93) depth--;
  }
  return true;
}

/** 415 unless Content-Type is one of `types` and Content-Encoding is identity or gzip. */
export function checkMediaType(req: Request, types: ReadonlySet<string>): void {
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (!types.has(type)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Type must be ${[...types].join(' or ')}`);
  }
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Encoding must be identity or gzip');
  }
}

const JSON_ONLY = new Set(['application/json']);

/** A JSON request body (application/json, maybe gzip) within `limits`; empty is 400. */
export async function readJsonBody(req: Request, limits: BodyLimits, maxDepth: number): Promise<unknown> {
  checkMediaType(req, JSON_ONLY);
  const raw = await readBody(req, limits);
  if (raw.length === 0) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
  return parseBody(raw, maxDepth);
}
