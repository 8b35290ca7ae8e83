import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/**
 * CORS for browser pixels: any origin may send (the access key, not the origin, is the
 * credential), no cookies. A key restricted to origins is enforced in authenticate().
 */
export function corsFor(maxAgeS: number): RequestHandler {
  return (req, res, next) => {
    corsHeaders(req, res, maxAgeS);
    next();
  };
}

/** corsFor's headers on `res`: for routes served on plain node:http (POST /api/telemetry/events). */
export function corsHeaders(req: IncomingMessage, res: ServerResponse, maxAgeS: number): void {
  const origin = req.headers.origin;
  if (origin) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
    res.setHeader(
      'Access-Control-Expose-Headers',
      'RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-Id',
    );
  }
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'POST, GET, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Content-Encoding, X-Access-Key, X-Request-Id');
    res.setHeader('Access-Control-Max-Age', String(maxAgeS));
  }
}
