import { expect } from 'chai';
import { createValidators, DEFAULT_TENANT, LIMITS, type EventMessage } from '@telemetry/contract';
import { rowBinaryEncoder, typeWriter, type Column } from '@telemetry/platform';
import {
  canonicalEventDecoder,
  canonicalMillis,
  canonicalValueEnd,
  decodeFailedEvent,
  eventDecoder,
  eventsTopicDecoder,
  NO_AGENT,
  type Decoded,
  type Enricher,
  type EventRow,
} from '@telemetry/store';
import { toMessages } from '@telemetry/ingest-gateway';

/**
 * The consumer's fast path for event messages (libs/store/src/event-bytes.ts) against the
 * general one (JSON.parse, the schema, JSON.stringify of the payload): for every message
 * it takes, the same row, and the same RowBinary bytes; the others it leaves to the
 * general path (undefined), which decides.
 */
const v = createValidators();
const enricher: Enricher = {
  geo: (ip) => ({ country: 'DE', region: `r-${ip}`, city: 'Berlin' }),
  agent: (ua) => ({ ...NO_AGENT, browser: ua.slice(0, 5), device_type: 'desktop', is_bot: ua.includes('bot') ? 1 : 0 }),
};

/** The events table's columns as the consumer inserts them (18.16 and modern shapes). */
function columns(modern: boolean): Column[] {
  const t = modern ? "DateTime64(3, 'UTC')" : "DateTime('UTC')";
  const s = (name: string): Column => ({ name, type: 'String' });
  return [
    s('tenant_id'),
    { name: 'event_id', type: 'UUID' },
    s('key_id'),
    s('source'),
    s('category'),
    s('payload'),
    s('client_event_id'),
    { name: 'id_time', type: t },
    { name: 'event_time', type: t },
    { name: 'client_ts', type: `Nullable(${t})` },
    { name: 'sent_at', type: `Nullable(${t})` },
    { name: 'received_at', type: t },
    { name: 'inserted_at', type: "DateTime('UTC')" },
    ...['protocol', 'anonymous_id', 'user_id', 'client_ip', 'user_agent'].map(s),
    ...['geo_country', 'geo_region', 'geo_city', 'browser', 'browser_version', 'os', 'os_version', 'device_type'].map(
      s,
    ),
    { name: 'is_bot', type: 'UInt8' },
  ];
}

const base = {
  v: 1,
  event_id: '0190a4d2-3b1c-8e2f-9a4b-5c6d7e8f9a0b',
  key_id: 'key_1234',
  tenant_id: DEFAULT_TENANT,
  source: 'web',
  category: 'page_view',
  received_at: '2026-11-27T10:00:00.123Z',
};

/** Payloads whose JSON text the fast path takes (JSON.stringify's form). */
const payloads: unknown[] = [
  {},
  { path: '/products/1', n: 1, f: 1.5, neg: -3, big: 1e21, small: 5e-7, z: 0, t: true, u: false, x: null },
  { title: 'Café – 東京 🎉 naïve', emoji: '👩‍👩‍👧' },
  { quote: 'say "hi"', backslash: 'a\\b', nl: 'l1\nl2\r\t', ctl: '\u0001\u001f\b\f', del: '\u007f' },
  { nested: { deep: [1, [2, [3, { a: [] }]], 'x'], empty: {} }, list: [] },
  { seps: '\u2028\u2029', slash: 'a/b', lt: '<script>' },
  { __proto__x: 1, '': 'empty key', 'a b': 2 },
  { long: 'x'.repeat(100_000), arr: Array.from({ length: 500 }, (_, i) => ({ i, s: `v${i}` })) },
  Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])),
  { max: Number.MAX_SAFE_INTEGER, beyond: 2 ** 70, tiny: -0.000001 },
];

/** Messages of the gateway's form with every optional field in turn. */
function gatewayMessages(): Buffer[] {
  const out: Buffer[] = [];
  for (const payload of payloads) {
    out.push(Buffer.from(JSON.stringify({ ...base, payload })));
  }
  const variants: Partial<EventMessage>[] = [
    { client_event_id: 'c-1', client_ts: '2026-11-27T09:59:59.001Z', sent_at: '2026-11-27T10:00:00.100Z' },
    { client_event_id: '0190a4d2-3b1c-7e2f-9a4b-5c6d7e8f9a0b' }, // a UUIDv7 client id
    { client_event_id: 'c-2', client_ts: '2020-02-29T23:59:59.999Z' }, // far outside the window
    { client_ts: '2026-11-27T10:00:00.123Z', sent_at: '2000-01-01T00:00:00.000Z' },
    { protocol: 'segment', anonymous_id: 'anon-ü', user_id: 'user 1', user_agent: 'Mozilla/5.0 bot' },
    { request_ip: '203.0.113.7', request_user_agent: 'curl/8', ip_storage: 'full' },
    { request_ip: '2001:db8::1', ip_storage: 'none' },
    { request_ip: '::ffff:192.0.2.1' },
    { tenant_id: undefined },
    { category: 'Added to cart: Shoes ✓' },
  ];
  for (const extra of variants) {
    out.push(Buffer.from(JSON.stringify({ ...base, ...extra, payload: { a: 1 } })));
  }
  // As the gateway makes them (toMessages).
  const req = {
    sent_at: '2026-11-27T10:00:01.000Z',
    events: payloads.slice(0, 5).map((payload, i) => ({
      source: 'ios',
      category: 'click',
      id: `id-${i}`,
      timestamp: '2026-11-27T10:00:00.500Z',
      payload: payload as Record<string, unknown>,
    })),
  };
  for (const m of toMessages(req, { keyId: 'k', tenantId: DEFAULT_TENANT }, base.received_at, LIMITS.maxEventBytes)) {
    out.push(Buffer.from(m.value as string));
  }
  return out;
}

/** Messages the fast path must leave to the general path (each still decodes or dead-letters there). */
const fallbacks: [string, string][] = [
  ['whitespace', JSON.stringify({ ...base, payload: { a: 1 } }, null, 1)],
  ['payload not in stringify form: spaces', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a": 1}')],
  ['payload escape \\/', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":"x\\/y"}')],
  ['payload escape \\u0041', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":"\\u0041"}')],
  ['payload escape \\u000a', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":"\\u000a"}')],
  ['payload upper-case hex', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":"\\u001F"}')],
  ['payload lone surrogate', JSON.stringify({ ...base, payload: { a: '\ud800' } })],
  ['payload number 1.0', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":1.0}')],
  ['payload number 1E3', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":1E3}')],
  ['payload number -0', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":-0}')],
  ['payload number 007', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":007}')],
  ['payload number 1e999', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":1e999}')],
  ['payload duplicate key', JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":1,"b":2,"a":3}')],
  ['payload integer-like key', JSON.stringify({ ...base, payload: { b: 1, 2: 'x' } })],
  ['payload an array', JSON.stringify({ ...base, payload: [1, 2] })],
  ['payload a string', JSON.stringify({ ...base, payload: 'text' })],
  ['payload missing', JSON.stringify({ ...base })],
  [
    'payload too deep',
    JSON.stringify({ ...base, payload: 'P' }).replace('"P"', '{"a":'.repeat(80) + '1' + '}'.repeat(80)),
  ],
  ['escaped top-level string', JSON.stringify({ ...base, source: 'w"eb', payload: {} })],
  ['unicode escape in a field', JSON.stringify({ ...base, payload: {} }).replace('"web"', '"w\\u0065b"')],
  ['v as 1.0', JSON.stringify({ ...base, payload: {} }).replace('"v":1', '"v":1.0')],
  ['v as 2', JSON.stringify({ ...base, v: 2, payload: {} })],
  ['duplicate field', JSON.stringify({ ...base, payload: {} }).replace('"v":1', '"v":1,"source":"x"')],
  ['unknown field', JSON.stringify({ ...base, extra: 1, payload: {} })],
  [
    'schema_failure',
    JSON.stringify({ ...base, payload: {}, schema_failure: { schema_id: 's', schema_version: 1, violations: [] } }),
  ],
  ['client_ip', JSON.stringify({ ...base, client_ip: '198.51.100.1', payload: {} })],
  ['received_at not canonical', JSON.stringify({ ...base, received_at: '2026-11-27T10:00:00Z', payload: {} })],
  ['received_at before 1970', JSON.stringify({ ...base, received_at: '1969-12-31T23:59:59.999Z', payload: {} })],
  ['received_at past DateTime', JSON.stringify({ ...base, received_at: '2106-03-01T00:00:00.000Z', payload: {} })],
  ['bad date', JSON.stringify({ ...base, received_at: '2026-02-30T00:00:00.000Z', payload: {} })],
  ['bad event id', JSON.stringify({ ...base, event_id: 'nope', payload: {} })],
  ['trailing text', JSON.stringify({ ...base, payload: {} }) + 'x'],
  ['not JSON', '{"v":1,'],
  ['empty', ''],
  ['BOM', '\ufeff' + JSON.stringify({ ...base, payload: {} })],
];

describe('canonicalEventDecoder (the consumer fast path for event messages)', () => {
  for (const modern of [false, true]) {
    describe(modern ? 'modern events (DateTime64)' : 'ClickHouse 18.16 events (DateTime)', () => {
      const fast = canonicalEventDecoder(modern, enricher);
      const general = eventDecoder(v, modern, enricher);
      const encode = rowBinaryEncoder(columns(modern))!;

      it('gives the general path rows and RowBinary bytes, byte for byte', () => {
        const messages = gatewayMessages();
        expect(messages.length).to.equal(25);
        for (const m of messages) {
          const a = fast(m);
          const b = general(m);
          expect(a, m.toString().slice(0, 200)).to.not.equal(undefined);
          expect(b.ok).to.equal(true);
          if (!a?.ok || !b.ok) continue;
          // inserted_at is the time of decoding: the same second in both unless a second turned.
          const same = { ...a.row, inserted_at: b.row.inserted_at };
          expect(same).to.deep.equal(b.row);
          expect(encode([same]).equals(encode([b.row]))).to.equal(true);
        }
      });

      for (const [name, text] of fallbacks) {
        it(`leaves to the general path: ${name}`, () => {
          const m = Buffer.from(text);
          expect(fast(m)).to.equal(undefined);
          // The general path still decides: a row, a failed event or a dead letter.
          const d = decodeFailedEvent(v, m) ?? general(m);
          expect(d).to.have.property('ok');
        });
      }

      it('leaves invalid UTF-8 in the payload to the general path, and takes it in a field as JSON.parse reads it', () => {
        const head = Buffer.from(JSON.stringify({ ...base, payload: 'P' }).split('"P"')[0]!);
        const tail = Buffer.from('}');
        const badPayload = Buffer.concat([head, Buffer.from('{"\xff":1,"\xfe":2}', 'latin1'), tail]);
        expect(fast(badPayload)).to.equal(undefined);
        const badField = Buffer.from(JSON.stringify({ ...base, user_id: 'u-X', payload: { a: 1 } }));
        badField[badField.indexOf('u-X') + 2] = 0xff;
        const a = fast(badField);
        const b = general(badField);
        if (a?.ok && b.ok) expect({ ...a.row, inserted_at: 0 }).to.deep.equal({ ...b.row, inserted_at: 0 });
        else expect(a).to.equal(undefined);
      });

      it('leaves an empty message to the general path', () => {
        expect(fast(null)).to.equal(undefined);
      });
    });
  }

  it('reads canonical payloads to their end and refuses the rest (JSON.stringify(JSON.parse(text)) === text)', () => {
    const texts = [
      '{}',
      '[]',
      '{"a":[1,-2,3.5,"x",true,false,null,{}]}',
      '"\\u0000\\b"',
      '{"a":1,"b":{"a":2}}',
      '{"a":1,"a":2}',
      '{"a":1 }',
      '[1,]',
      '{"a":tru}',
      '1.50',
      '0.1',
      '-1e-7',
      '123456789012345678',
    ];
    for (const t of texts) {
      let canonical: boolean;
      try {
        canonical = JSON.stringify(JSON.parse(t)) === t;
      } catch {
        canonical = false;
      }
      const end = canonicalValueEnd(Buffer.from(t), 0);
      expect(end === t.length, t).to.equal(canonical);
    }
  });

  it('reads canonical times as Date.parse does', () => {
    for (const t of [
      '1970-01-01T00:00:00.000Z',
      '2000-02-29T12:34:56.789Z',
      '2026-11-27T23:59:59.999Z',
      '2106-02-07T06:28:15.999Z',
      '2106-02-07T06:28:16.000Z',
      '1969-12-31T23:59:59.999Z',
      '0001-01-01T00:00:00.000Z',
    ]) {
      const ms = Date.parse(t);
      const expected = ms >= 0 && ms < 4_294_967_296 * 1000 ? ms : null;
      expect(canonicalMillis(t), t).to.equal(expected);
    }
  });

  it('typeWriter covers every events column', () => {
    for (const c of columns(true)) expect(typeWriter(c.type), c.type).to.not.equal(undefined);
  });
});

describe('eventsTopicDecoder (EVENT_DECODER, the kill switch of the byte decoder)', () => {
  for (const modern of [false, true]) {
    it(`with json every message takes the general path, with the same rows as bytes (${modern ? 'modern' : '18.16'})`, () => {
      const messages = [...gatewayMessages(), ...fallbacks.map(([, text]) => Buffer.from(text)), null];
      const canonical = canonicalEventDecoder(modern, enricher);
      const decodeEvent = eventDecoder(v, modern, enricher);
      const calls = { fast: 0, general: 0 };
      const fast = (b: Buffer | null): ReturnType<typeof canonical> => (calls.fast++, canonical(b));
      const general = (b: Buffer | null): Decoded<object> => (
        calls.general++,
        decodeFailedEvent(v, b) ?? decodeEvent(b)
      );
      const decoders = {
        bytes: eventsTopicDecoder<object>('bytes', fast, general),
        json: eventsTopicDecoder<object>('json', fast, general),
      };

      const json = messages.map((m) => decoders.json(m));
      expect(calls).to.deep.equal({ fast: 0, general: messages.length });

      calls.general = 0;
      const bytes = messages.map((m) => decoders.bytes(m));
      expect(calls.fast).to.equal(messages.length);
      // Only the messages the byte decoder leaves (fallbacks, null) reach the general path.
      expect(calls.general).to.equal(fallbacks.length + 1);

      // inserted_at is the time of decoding: compared apart from it.
      const plain = (d: Decoded<object>): unknown => (d.ok ? { ...d.row, inserted_at: 0 } : d);
      expect(json.filter((d) => d.ok).length).to.be.greaterThan(gatewayMessages().length - 1);
      expect(bytes.map(plain)).to.deep.equal(json.map(plain));
    });
  }
});

export type { EventRow };
