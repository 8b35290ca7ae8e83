import { expect } from 'chai';
import { createValidators } from '@telemetry/contract';
import {
  withKeptAddress,
  compatIp,
  compatMessages,
  compatTime,
  type CompatEvent,
} from '../../services/ingest-gateway/src/protocols/compat.js';

const v = createValidators();
const key = { keyId: 'key_1', tenantId: 'ten_a', allowedSources: new Set<string>() };

describe("the trackers' one mapping (unit)", () => {
  it('reads RFC 3339 times with a zone, any fraction digits and offsets with or without a colon', () => {
    expect(compatTime('2026-11-26T13:41:08.123456+00:00')).to.equal('2026-11-26T13:41:08.123Z');
    expect(compatTime('2026-11-26T14:41:08+0100')).to.equal('2026-11-26T13:41:08.000Z');
    expect(compatTime('2026-11-26 13:41:08z')).to.equal('2026-11-26T13:41:08.000Z');
    expect(compatTime(undefined)).to.equal(undefined);
  });

  it('refuses a time without a zone, a day the month does not have, and other non-times', () => {
    for (const t of [
      '2024-01-01',
      '2026-11-26T13:41:08',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-01T24:00:00Z',
      'yesterday',
      1764164468000,
      '1969-12-31T23:59:59Z',
    ]) {
      expect(compatTime(t), String(t)).to.equal(null);
    }
    expect(compatTime('2024-02-29T00:00:00Z')).to.equal('2024-02-29T00:00:00.000Z');
  });

  it('carries a client address only as the message schema takes it: no zone id, no other text', () => {
    expect(compatIp('203.0.113.9')).to.equal('203.0.113.9');
    expect(compatIp('2001:db8::1')).to.equal('2001:db8::1');
    for (const ip of ['fe80::1%eth0', 'fe80::1%1', 'localhost', '1.2.3', 42, `${'0:'.repeat(30)}1`]) {
      expect(compatIp(ip), String(ip)).to.equal(undefined);
    }
  });

  it('every message it makes passes the event message schema the consumer checks (a 2xx is never dead-lettered)', () => {
    const odd: Partial<CompatEvent>[] = [
      { clientIp: 'fe80::1%eth0', userAgent: 'x'.repeat(600) },
      { clientIp: '::ffff:127.0.0.1', userAgent: 'Mozilla/5.0 ü' },
      { clientId: 'a'.repeat(500), library: '@@@', category: '$pageview' },
      { clientId: 12345, library: 'analytics-python', category: 'Order Completed 🛒' },
      {
        anonymousId: 42,
        userId: 'ü'.repeat(256),
        timestamp: '2026-11-26T13:41:08.1+00:00',
        sentAt: '2026-11-26T13:41:09Z',
      },
      { userAgent: 'a\u0085b', clientIp: '10.0.0.1' },
    ];
    const events = odd.map((e) => ({ protocol: 'segment' as const, category: 'track', payload: { a: 1 }, ...e }));
    const messages = compatMessages(events, key, new Date().toISOString(), 64 * 1024, (i) => `/batch/${i}`);
    expect(messages).to.have.length(odd.length);
    for (const m of messages) {
      const value: unknown = JSON.parse(String(m.value));
      expect(v.eventMessage(value), JSON.stringify(v.eventMessage.errors)).to.equal(true);
    }
    expect(JSON.parse(String(messages[0]!.value))).to.not.have.property('client_ip');
  });
});

describe('the address a tracker reports in its payload (unit)', () => {
  const payload = { event: 'x', context: { ip: '203.0.113.77', locale: 'de' } };
  it("keeps it in the payload only as the key's ip_storage keeps client_ip, without touching the client's object", () => {
    expect(withKeptAddress(payload, ['context', 'ip'], undefined)).to.deep.equal({
      event: 'x',
      context: { locale: 'de', ip: '203.0.113.0' },
    });
    expect(withKeptAddress(payload, ['context', 'ip'], 'none')).to.deep.equal({
      event: 'x',
      context: { locale: 'de' },
    });
    expect(withKeptAddress(payload, ['context', 'ip'], 'full')).to.equal(payload);
    expect(payload.context.ip).to.equal('203.0.113.77');
    // Not an address: nothing of it is kept unless the key keeps addresses whole.
    expect(withKeptAddress({ properties: { $ip: 'somewhere' } }, ['properties', '$ip'], 'truncated')).to.deep.equal({
      properties: {},
    });
    const none = { properties: { a: 1 } };
    expect(withKeptAddress(none, ['properties', '$ip'], 'truncated')).to.equal(none);
  });
});
