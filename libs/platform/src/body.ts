import { gunzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LIMITS } from '@telemetry/contract';
import { AppError } from './errors.js';

export interface BodyLimits {
  /** Bytes on the wire and, for gzip, after decompression. */
  maxBytes: number;
  /** Largest decompressed/compressed ratio accepted for gzip bodies (zip bombs). */
  maxRatio: number;
}

function tooLarge(limit: string, max: number, message: string): AppError {
  // The connection closes after the answer: at most DISCARD_BODY_MAX_BYTES of the rest of
  // the body is read and thrown away first (discardRest), never kept.
  return new AppError('PAYLOAD_TOO_LARGE', message, { limit, max }, { Connection: 'close' });
}

/**
 * Reads the request body with hard limits: a declared or actual size over `maxBytes`
 * stops reading at once; gzip is inflated with an output cap and a ratio cap.
 */
export async function readBody(req: IncomingMessage, limits: BodyLimits): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > limits.maxBytes) {
    throw tooLarge('maxBodyBytes', limits.maxBytes, `body is larger than ${limits.maxBytes} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  // NOTE: not `for await (... of req)`: leaving that loop early destroys the request and,
  // with it, the socket, before the 413 is written. The rest is discardRest's.
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > limits.maxBytes) {
      throw tooLarge('maxBodyBytes', limits.maxBytes, `body is larger than ${limits.maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'gzip') return raw;
  return gunzipWithin(raw, limits);
}

/**
 * Inflates a gzip body with the same caps as readBody (output size, ratio): for
 * protocols that send gzip without `Content-Encoding` (posthog-js's `gzip-js`).
 */
export function gunzipWithin(raw: Buffer, limits: BodyLimits): Buffer {
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

/** How much of a refused body's rest is read and discarded, and for how long (config: DISCARD_BODY_*). */
export interface DiscardLimits {
  maxBytes: number;
  timeoutMs: number;
}

/**
 * Call before answering a request whose body is not all read (a 413): once the answer is
 * written, the rest of the body is read and discarded, up to `limits`, before the connection
 * closes, as nginx's lingering close does. Without it a client that writes the whole body
 * before reading (Python's urllib and requests) gets a broken pipe or a reset instead of the
 * answer: the kernel resets a closed socket that still receives. A rest declared larger
 * than `maxBytes`, one that turns out larger, or one slower than `timeoutMs`, is cut.
 */
export function discardRest(req: IncomingMessage, res: ServerResponse, limits: DiscardLimits): void {
  if (req.complete || limits.maxBytes === 0) return;
  const socket = req.socket;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared === 0 && req.headers['transfer-encoding'] === undefined) return; // no body
  if (declared > limits.maxBytes) return; // Node's own close, at once
  const destroySoon = socket.destroySoon.bind(socket);
  let closeWanted = false;
  // NOTE: Node closes the socket of a `Connection: close` answer (ours, or the client
  // asked for it) with destroySoon() as soon as the answer is written. Until the rest of
  // the body is read, that closes only our half: the answer and a FIN, no reset.
  socket.destroySoon = () => {
    closeWanted = true;
    if (socket.writable) socket.end();
  };
  let timer: NodeJS.Timeout | undefined;
  let over = false;
  const done = (cut: boolean): void => {
    if (over) return;
    over = true;
    clearTimeout(timer);
    req.off('data', count);
    socket.off('close', closed);
    socket.destroySoon = destroySoon;
    if (cut) socket.destroy();
    else if (closeWanted) destroySoon();
  };
  let discarded = 0;
  const count = (chunk: Buffer): void => {
    discarded += chunk.length;
    if (discarded > limits.maxBytes) done(true);
  };
  res.once('finish', () => {
    if (req.complete) return done(false);
    timer = setTimeout(() => done(true), limits.timeoutMs);
    // After Node's own finish handler (which may dump the body and drop 'data' listeners).
    req.on('data', count);
    req.once('end', () => done(false));
    req.resume();
  });
  const closed = (): void => clearTimeout(timer);
  socket.once('close', closed);
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
export function checkMediaType(req: IncomingMessage, types: ReadonlySet<string>): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (!types.has(type)) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Content-Type must be ${[...types].join(' or ')}`);
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Encoding must be identity or gzip');
  }
}

const JSON_ONLY = new Set(['application/json']);

/** A JSON request body (application/json, maybe gzip) within `limits`; empty is 400. */
export async function readJsonBody(req: IncomingMessage, limits: BodyLimits, maxDepth: number): Promise<unknown> {
  checkMediaType(req, JSON_ONLY);
  const raw = await readBody(req, limits);
  if (raw.length === 0) throw new AppError('INVALID_JSON', 'an empty body is not a valid request');
  return parseBody(raw, maxDepth);
}
