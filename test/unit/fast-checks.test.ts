import { expect } from 'chai';
import { createValidators, isCanonicalEventMessage } from '@telemetry/contract';

const validators = createValidators();

const base = {
  v: 1,
  event_id: '0192f5e4-7c1a-7b2e-9f00-0123456789ab',
  key_id: 'k_0123456789ab',
  tenant_id: 'ten_acme',
  source: 'shop-1',
  category: 'page_view',
  payload: { url: '/p/1', n: 1 },
  client_event_id: 'c-1',
  client_ts: '2026-11-23T05:00:00.123Z',
  sent_at: '2026-11-23T05:00:01.000Z',
  received_at: '2026-11-23T05:00:01.250Z',
};

/** One change to the message: a field set to a value, or removed (undefined). */
const changes: [string, unknown][] = [
  ['v', 2],
  ['v', '1'],
  ['event_id', 'not-a-uuid'],
  ['event_id', '0192F5E4-7C1A-7B2E-9F00-0123456789AB'],
  ['event_id', 'urn:uuid:0192f5e4-7c1a-7b2e-9f00-0123456789ab'],
  ['event_id', undefined],
  ['key_id', ''],
  ['key_id', 'k'.repeat(64)],
  ['key_id', 'k'.repeat(65)],
  ['key_id', 7],
  ['tenant_id', undefined],
  ['tenant_id', 'ten_'],
  ['tenant_id', 'acme'],
  ['tenant_id', 'ten_' + 'a'.repeat(32)],
  ['tenant_id', 'ten_' + 'a'.repeat(33)],
  ['source', ''],
  ['source', 's'.repeat(128)],
  ['source', 's'.repeat(129)],
  ['source', '-shop'],
  ['source', 'shop page'],
  ['source', 'shöp'],
  ['category', undefined],
  ['category', 'a/b:c.d_e-f'],
  ['payload', []],
  ['payload', null],
  ['payload', 'text'],
  ['payload', {}],
  ['client_event_id', undefined],
  ['client_event_id', ''],
  ['client_event_id', 'x'.repeat(128)],
  ['client_event_id', 'x'.repeat(129)],
  ['client_event_id', '😀'.repeat(64)], // 128 UTF-16 units, 64 code points
  ['client_event_id', '😀'.repeat(100)], // 200 units, 100 code points: the schema accepts it
  ['client_ts', undefined],
  ['client_ts', '2026-11-23T05:00:00Z'],
  ['client_ts', '2026-11-23T07:00:00.000+02:00'],
  ['client_ts', '2026-02-30T00:00:00.000Z'],
  ['client_ts', '2024-02-29T00:00:00.000Z'],
  ['client_ts', '2023-02-29T00:00:00.000Z'],
  ['client_ts', '1900-02-29T00:00:00.000Z'],
  ['client_ts', '2000-02-29T00:00:00.000Z'],
  ['client_ts', '2026-04-31T00:00:00.000Z'],
  ['client_ts', '2026-12-31T23:59:59.999Z'],
  ['client_ts', '2026-13-01T00:00:00.000Z'],
  ['client_ts', '2026-00-10T00:00:00.000Z'],
  ['client_ts', '2026-01-00T00:00:00.000Z'],
  ['client_ts', '2026-01-01T00:60:00.000Z'],
  ['client_ts', '2026-01-01T00:00:60.000Z'],
  ['client_ts', '0000-01-01T00:00:00.000Z'],
  ['client_ts', '2026-11-23T24:00:00.000Z'],
  ['client_ts', '2026-11-23T05:00:00.000z'],
  ['client_ts', 'yesterday'],
  ['client_ts', 0],
  ['sent_at', '1970-01-01T00:00:00.000Z'],
  ['sent_at', '+012026-11-23T05:00:00.000Z'],
  ['received_at', undefined],
  ['received_at', '2026-11-23 05:00:01.250Z'],
  ['received_at', '9999-12-31T23:59:59.999Z'],
  ['extra', 1],
  ['__proto__', { v: 1 }],
];

describe('hand-written message checks agree with the schema (unit)', () => {
  it('accepts the canonical messages the gateway writes', () => {
    expect(isCanonicalEventMessage(base)).to.equal(true);
    expect(validators.eventMessage(base)).to.equal(true);
  });

  it('never accepts a message the schema refuses, over every single change and pairs of them', () => {
    let fastAccepted = 0;
    let deferred = 0;
    const variants: Record<string, unknown>[] = [];
    const apply = (m: Record<string, unknown>, [k, v]: [string, unknown]): Record<string, unknown> => {
      const copy = JSON.parse(JSON.stringify(m)) as Record<string, unknown>;
      if (v === undefined) delete copy[k];
      else if (k === '__proto__') return JSON.parse(JSON.stringify(m).replace(/^{/, '{"__proto__":{"v":1},')) as never;
      else copy[k] = v;
      return copy;
    };
    for (const a of changes) {
      variants.push(apply(base, a));
      for (const b of changes) if (a[0] !== b[0]) variants.push(apply(apply(base, a), b));
    }
    variants.push(null as never, [] as never, 'x' as never, 1 as never);
    for (const m of variants) {
      const schema = validators.eventMessage(m);
      const fast = isCanonicalEventMessage(m);
      if (fast) {
        expect(schema, JSON.stringify(m)).to.equal(true);
        fastAccepted++;
      } else if (schema) deferred++;
    }
    // The check is useful: it takes most valid variants, and leaves the odd ones to ajv.
    expect(fastAccepted).to.be.greaterThan(deferred);
    expect(deferred).to.be.greaterThan(0);
  });
});
