import { randomBytes } from 'node:crypto';
import type { IngestRequest, TelemetryEvent } from '@telemetry/contract';

/** A page-view event whose payload serializes to about 200 bytes. */
export function sampleEvent(i: number): TelemetryEvent {
  return {
    source: 'shop.example',
    category: 'page_view',
    payload: {
      path: `/products/trail-shoe-${1000 + (i % 9000)}`,
      referrer: 'https://www.example.com/search?q=trail+shoes',
      title: 'Trail shoe | Example Shop',
      session: randomBytes(8).toString('hex'),
      viewport: { w: 1440, h: 900 },
      price_cents: 8999,
    },
  };
}

/** An event schema (draft 2020-12) that every sampleEvent's payload passes: the bench's schema variant. */
export const sampleEventSchema = {
  type: 'object',
  required: ['path', 'title', 'session', 'price_cents'],
  additionalProperties: false,
  properties: {
    path: { type: 'string', pattern: '^/products/[a-z0-9-]+$', maxLength: 200 },
    referrer: { type: 'string', format: 'uri' },
    title: { type: 'string', maxLength: 200 },
    session: { type: 'string', pattern: '^[0-9a-f]{16}$' },
    viewport: {
      type: 'object',
      required: ['w', 'h'],
      properties: { w: { type: 'integer', minimum: 0 }, h: { type: 'integer', minimum: 0 } },
    },
    price_cents: { type: 'integer', minimum: 0 },
  },
};

/** A request body with `n` events. */
export function requestBody(n: number): string {
  return JSON.stringify({ events: Array.from({ length: n }, (_, i) => sampleEvent(i)) } satisfies IngestRequest);
}
