import { expect } from 'chai';
import { compileEventSchema, eventSchemaProblems, EVENT_SCHEMA_LIMITS } from '@telemetry/contract/event-schema';
import { createLogger, type ProducerMessage } from '@telemetry/platform';
import type { EventSchemaRecord } from '@telemetry/store';
import { GatewaySchemas } from '../../services/ingest-gateway/src/event-schemas.js';

const refusal = (schema: unknown): string => JSON.stringify(eventSchemaProblems(schema));

describe('event schemas: what a tenant may submit, and how the gateway applies it (unit)', () => {
  it('accepts a strict draft 2020-12 schema, union types, internal $refs and the listed formats', () => {
    const ok = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { money: { type: ['number', 'string'] } },
      properties: {
        price: { $ref: '#/$defs/money' },
        at: { type: 'string', format: 'date-time' },
        sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]+$' },
      },
      patternProperties: { '^x_': { type: 'string' } },
    };
    expect(eventSchemaProblems(ok)).to.deep.equal([]);
  });

  it('refuses what is not a JSON Schema (not an object, a bad type, an unknown keyword in strict mode)', () => {
    expect(refusal('string')).to.contain('must be a JSON Schema object');
    expect(refusal([{ type: 'object' }])).to.contain('must be a JSON Schema object');
    expect(refusal({ type: 'objekt' })).to.contain('not a JSON Schema');
    expect(refusal({ type: 'object', colour: 'red' })).to.contain('unknown keyword');
    expect(refusal({ type: 'object', properties: { d: { type: 'string', format: 'credit-card' } } })).to.contain(
      'unknown format',
    );
    expect(refusal({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' })).to.contain('2020-12');
  });

  it('refuses a schema over 32 KiB and one nested deeper than 32 levels', () => {
    const big = { type: 'object', description: 'é'.repeat(EVENT_SCHEMA_LIMITS.maxSchemaBytes / 2) };
    expect(refusal(big)).to.contain(`at most ${EVENT_SCHEMA_LIMITS.maxSchemaBytes}`);
    let deep: object = { type: 'string' };
    for (let i = 0; i < 17; i++) deep = { type: 'object', properties: { a: deep } };
    expect(refusal(deep)).to.contain('deeper than 32');
    let fine: object = { type: 'string' };
    for (let i = 0; i < 15; i++) fine = { type: 'object', properties: { a: fine } };
    expect(eventSchemaProblems(fine)).to.deep.equal([]);
  });

  it('refuses references that would make validation unbounded: a doubling chain, a cycle, uniqueItems without a small maxItems', () => {
    // Each definition names the next twice: 2^n subschemas once followed (a review measured
    // 300 ms per event at n = 18 before this check; n = 30 would take minutes).
    const chain = (n: number): object => {
      const defs: Record<string, unknown> = { [`d${n}`]: { type: 'string' } };
      for (let i = 0; i < n; i++)
        defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
      return { type: 'object', $defs: defs, properties: { a: { $ref: '#/$defs/d0' } } };
    };
    expect(eventSchemaProblems(chain(3))).to.deep.equal([]);
    expect(refusal(chain(30))).to.contain('expands to more than 1000 subschemas');
    const tree = { $defs: { t: { type: 'object', properties: { c: { $ref: '#/$defs/t' } } } }, $ref: '#/$defs/t' };
    expect(refusal(tree)).to.contain('recursive schemas are refused');
    expect(refusal({ type: 'array', uniqueItems: true })).to.contain('needs maxItems of at most 100');
    expect(refusal({ type: 'array', uniqueItems: true, maxItems: 5000 })).to.contain('needs maxItems');
    expect(eventSchemaProblems({ type: 'array', uniqueItems: true, maxItems: 100 })).to.deep.equal([]);
    expect(refusal({ type: 'object', properties: { a: { $dynamicRef: '#x' } } })).to.contain('is not supported');
  });

  it('refuses remote references: $ref and $dynamicRef must stay inside the schema', () => {
    expect(refusal({ $ref: 'https://schemas.example.test/a.json' })).to.contain('remote references are refused');
    expect(refusal({ type: 'object', properties: { a: { $ref: 'other.json#/x' } } })).to.contain('/properties/a/$ref');
    expect(refusal({ $dynamicRef: 'http://x.test/s' })).to.contain('remote references');
    // An internal reference to nothing does not compile either.
    expect(refusal({ $ref: '#/$defs/missing' })).to.contain('not a JSON Schema');
  });

  it('refuses patterns the linear-time engine cannot run and format regex; nested quantifiers stay bounded', () => {
    expect(refusal({ type: 'string', pattern: '(a)\\1' })).to.contain('linear-time engine cannot run');
    expect(refusal({ type: 'string', pattern: 'a(?=b)' })).to.contain('linear-time engine cannot run');
    // A lookbehind V8's linear-time engine can run is fine.
    expect(eventSchemaProblems({ type: 'string', pattern: '(?<=a)b' })).to.deep.equal([]);
    expect(refusal({ type: 'object', patternProperties: { '(x)\\1': {} } })).to.contain(
      'linear-time engine cannot run',
    );
    expect(refusal({ type: 'string', format: 'regex' })).to.contain('format regex is refused');
    const check = compileEventSchema({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } });
    const started = process.hrtime.bigint();
    expect(check({ s: `${'a'.repeat(50_000)}!` })).to.deep.equal([
      { path: '/s', message: 'must match pattern "^(a+)+$"' },
    ]);
    // Backtracking alone takes longer than the universe's age here; V8 falls back to its
    // linear-time engine after 50,000 backtracks: milliseconds.
    expect(Number(process.hrtime.bigint() - started) / 1e6).to.be.below(1000);
  });

  it("runs an ordinary pattern at the backtracking engine's speed (well under a microsecond)", () => {
    const check = compileEventSchema({
      type: 'object',
      properties: { path: { type: 'string', pattern: '^/products/[a-z0-9-]+$' } },
    });
    const payload = { path: '/products/trail-shoe-1234' };
    for (let i = 0; i < 1000; i++) check(payload);
    const n = 20_000;
    const started = process.hrtime.bigint();
    let violations = 0;
    for (let i = 0; i < n; i++) violations += check(payload).length;
    const perCheck = Number(process.hrtime.bigint() - started) / 1e3 / n;
    expect(violations).to.equal(0);
    // About 0.1-0.2 µs on a shared 2-core machine; re2-wasm took about 2.5 µs.
    expect(perCheck, `${perCheck.toFixed(2)} µs per check`).to.be.below(1.5);
  });

  describe('GatewaySchemas', () => {
    const schema = (action: 'reject' | 'route'): EventSchemaRecord => ({
      schema_id: 'sch_00000000000000000001',
      tenant_id: 'ten_a',
      source: 'shop',
      category: 'order',
      action,
      version: 3,
      schema: { type: 'object', required: ['price'], properties: { price: { type: 'number' } } },
    });
    const index = (s: EventSchemaRecord) => ({
      hasTenant: (t: string) => t === s.tenant_id,
      find: (t: string, so: string, c: string) =>
        t === s.tenant_id && so === s.source && c === s.category ? s : undefined,
    });
    const logger = createLogger({ service: 'test', level: 'error' });
    const msg = (source: string, payload: object): ProducerMessage => ({
      key: 'k',
      value: JSON.stringify({
        v: 1,
        event_id: 'e',
        key_id: 'k',
        tenant_id: 'ten_a',
        source,
        category: 'order',
        payload,
      }),
    });

    it('leaves a tenant without schemas, conforming events and other sources untouched', () => {
      const g = new GatewaySchemas(index(schema('reject')), logger);
      const messages = [msg('shop', { price: 1 }), msg('web', { price: 'x' })];
      expect(g.apply('ten_a', messages)).to.deep.equal(messages);
      const other = [msg('shop', { price: 'x' })];
      expect(g.apply('ten_b', other)).to.equal(other);
    });

    it('reject: throws SCHEMA_VIOLATION naming each event, path and schema version', () => {
      const g = new GatewaySchemas(index(schema('reject')), logger);
      expect(() => g.apply('ten_a', [msg('shop', { price: 1 }), msg('shop', { price: 'x' })]))
        .to.throw()
        .that.deep.includes({ code: 'SCHEMA_VIOLATION' })
        .and.has.property('details')
        .that.deep.equals({
          invalid_events: [1],
          problems: [{ path: '/events/1/payload/price', message: 'must be number' }],
          schemas: [{ event: 1, schema_id: 'sch_00000000000000000001', version: 3 }],
        });
    });

    it('route: the violating event carries schema_failure; the others are as they were', () => {
      const g = new GatewaySchemas(index(schema('route')), logger);
      const good = msg('shop', { price: 1 });
      const [a, b] = g.apply('ten_a', [good, msg('shop', {})]);
      expect(a).to.equal(good);
      expect((JSON.parse(String(b!.value)) as { schema_failure: unknown }).schema_failure).to.deep.equal({
        schema_id: 'sch_00000000000000000001',
        version: 3,
        violations: [{ path: '/price', message: 'is required' }],
      });
    });
  });
});
