import { expect } from 'chai';
import { createValidators, LIMITS } from '@telemetry/contract';
import { eventIdFor, eventPartition } from '@telemetry/ingest-gateway';
import { parseBody, withinDepth } from '@telemetry/platform';
import { AppError } from '@telemetry/platform';

describe('ingest parsing and validation (unit)', () => {
  const v = createValidators();

  it('derives the same event id for the same key and client id, and differs otherwise', () => {
    const a = eventIdFor('k1', 'order-1');
    expect(a).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(eventIdFor('k1', 'order-1')).to.equal(a);
    expect(eventIdFor('k2', 'order-1')).to.not.equal(a);
    expect(eventIdFor('k1', undefined)).to.not.equal(eventIdFor('k1', undefined));
    expect(v.eventMessage.schema).to.be.an('object');
  });

  it('puts every copy of an event on one partition, and spreads events evenly', () => {
    // A retry maps to the same id, so to the same partition: one consumer resolves both.
    const id = eventIdFor('k1', 'order-1');
    expect(eventPartition(eventIdFor('k1', 'order-1'), 6)).to.equal(eventPartition(id, 6));
    const counts = new Array<number>(6).fill(0);
    for (let i = 0; i < 6000; i++) counts[eventPartition(eventIdFor('k1', i % 2 ? `o-${i}` : undefined), 6)]! += 1;
    for (const c of counts) expect(c).to.be.within(850, 1150);
    expect(eventPartition('not-a-uuid', 6)).to.equal(0);
  });

  it('measures nesting depth outside strings only', () => {
    expect(withinDepth('{"a":[{"b":1}]}', 3)).to.equal(true);
    expect(withinDepth('{"a":[{"b":1}]}', 2)).to.equal(false);
    expect(withinDepth('{"a":"[[[[[[[[[["}', 1)).to.equal(true);
    expect(withinDepth('{"a":"\\"[[[["}', 1)).to.equal(true);
  });

  it('rejects invalid UTF-8, bad JSON and too-deep JSON with stable codes', () => {
    const code = (f: () => unknown): string => {
      try {
        f();
      } catch (e) {
        return (e as AppError).code;
      }
      return 'none';
    };
    expect(code(() => parseBody(Buffer.from([0x7b, 0xff, 0x7d])))).to.equal('INVALID_JSON');
    expect(code(() => parseBody(Buffer.from('{"events":')))).to.equal('INVALID_JSON');
    const deep = '['.repeat(LIMITS.maxJsonDepth + 1) + ']'.repeat(LIMITS.maxJsonDepth + 1);
    expect(code(() => parseBody(Buffer.from(deep)))).to.equal('VALIDATION_FAILED');
  });

  it('keeps __proto__ as plain data and pollutes nothing', () => {
    const parsed = parseBody(
      Buffer.from(
        '{"events":[{"source":"s","category":"c","payload":{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}}]}',
      ),
    );
    expect(v.ingestRequest(parsed)).to.equal(true);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
    expect(JSON.stringify(parsed)).to.contain('"__proto__":{"polluted":1}');
  });

  it('validates events: required fields, names, payload an object, no unknown fields', () => {
    const ok = {
      events: [
        { source: 'shop.example', category: 'page_view', payload: {}, id: 'e-1', timestamp: '2026-11-22T10:00:00Z' },
      ],
      sent_at: '2026-11-22T10:00:01.5+01:00',
    };
    expect(v.ingestRequest(ok), JSON.stringify(v.ingestRequest.errors)).to.equal(true);
    const bad = [
      {},
      { events: [] },
      { events: 'x' },
      { events: [{ category: 'c', payload: {} }] },
      { events: [{ source: 's', category: 'c', payload: [] }] },
      { events: [{ source: 's', category: 'c', payload: 'x' }] },
      { events: [{ source: '', category: 'c', payload: {} }] },
      { events: [{ source: 'has space', category: 'c', payload: {} }] },
      { events: [{ source: 's'.repeat(129), category: 'c', payload: {} }] },
      { events: [{ source: 's', category: 'c', payload: {}, extra: 1 }] },
      { events: [{ source: 's', category: 'c', payload: {}, timestamp: 'yesterday' }] },
      { events: [{ source: 's', category: 'c', payload: {} }], other: 1 },
    ];
    for (const b of bad) expect(v.ingestRequest(b), JSON.stringify(b)).to.equal(false);
  });
});
