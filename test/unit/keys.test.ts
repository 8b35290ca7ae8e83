import { expect } from 'chai';
import { hashSecret, KeyStore, parseDuration, parseKey, type KeyRecord } from '@telemetry/store';

function record(over: Partial<KeyRecord> & { secret: string }): KeyRecord {
  const { secret, ...rest } = over;
  return {
    tenant_id: 'ten_a',
    key_id: '0123456789abcdef',
    kind: 'telemetry',
    name: 'k',
    secret_hash: hashSecret(secret),
    scopes: [],
    monitor_ids: [],
    allowed_origins: [],
    allowed_sources: [],
    revoked: 0,
    created_at: '2026-01-01 00:00:00',
    expires_at: null,
    version: 1,
    ...rest,
  };
}

/** The registry's key records, as a fake of our own loader (all, or those of some ids). */
class FakeSource {
  constructor(public records: KeyRecord[]) {}
  load = (ids?: readonly string[]): Promise<KeyRecord[]> =>
    Promise.resolve(ids === undefined ? this.records : this.records.filter((r) => ids.includes(r.key_id)));
}

describe('keys (unit)', () => {
  const secret = 'a'.repeat(64);
  const key = `tk_0123456789abcdef_${secret}`;

  it('parses only the exact key format', () => {
    expect(parseKey(key)).to.deep.equal({ kind: 'telemetry', keyId: '0123456789abcdef', secret });
    expect(parseKey(`ak_0123456789abcdef_${secret}`)?.kind).to.equal('api');
    for (const bad of [
      '',
      'tk_',
      key + 'a',
      key.toUpperCase(),
      `xx_0123456789abcdef_${secret}`,
      ` ${key}`,
      key.slice(0, -1) + 'g',
    ]) {
      expect(parseKey(bad), bad).to.equal(undefined);
    }
  });

  it('verifies a stored key and refuses wrong secrets, other kinds and unknown ids', async () => {
    const store = new KeyStore(new FakeSource([record({ secret })]).load);
    await store.mirror.reload();
    expect(store.verify(key, 'telemetry')?.keyId).to.equal('0123456789abcdef');
    expect(store.verify(`tk_0123456789abcdef_${'b'.repeat(64)}`, 'telemetry')).to.equal(undefined);
    expect(store.verify(key, 'api')).to.equal(undefined);
    expect(store.verify(`tk_ffffffffffffffff_${secret}`, 'telemetry')).to.equal(undefined);
    expect(store.verify('garbage', 'telemetry')).to.equal(undefined);
  });

  it('stops accepting a revoked key once the change feed names it, and forgets a deleted one', async () => {
    const source = new FakeSource([record({ secret })]);
    const store = new KeyStore(source.load);
    await store.mirror.reload();
    expect(store.verify(key, 'telemetry')).to.not.equal(undefined);
    source.records = [record({ secret, revoked: 1, version: 2 })];
    await store.mirror.apply(['0123456789abcdef']);
    expect(store.verify(key, 'telemetry')).to.equal(undefined);
    source.records = [record({ secret })];
    await store.mirror.apply(['0123456789abcdef']);
    expect(store.verify(key, 'telemetry')).to.not.equal(undefined);
    source.records = [];
    await store.mirror.apply(['0123456789abcdef']);
    expect(store.verify(key, 'telemetry')).to.equal(undefined);
  });

  it('refuses an expired key with KEY_EXPIRED, and only to a holder of the whole valid key', async () => {
    const store = new KeyStore(new FakeSource([record({ secret, expires_at: '2026-11-22 10:00:00' })]).load);
    await store.mirror.reload();
    const before = Date.parse('2026-11-22T09:59:59Z');
    const after = Date.parse('2026-11-22T10:00:00Z');
    expect(store.authenticate(key, 'telemetry', before).tenantId).to.equal('ten_a');
    expect(store.verify(key, 'telemetry', after)).to.equal(undefined);
    expect(() => store.authenticate(key, 'telemetry', after))
      .to.throw()
      .with.property('code', 'KEY_EXPIRED');
    expect(() => store.authenticate(`tk_0123456789abcdef_${'b'.repeat(64)}`, 'telemetry', after))
      .to.throw()
      .with.property('code', 'INVALID_CREDENTIALS');
  });

  it('parses key lifetimes for --expires-in', () => {
    expect(parseDuration('90d')).to.equal(90 * 86_400);
    expect(parseDuration('12h')).to.equal(12 * 3600);
    expect(parseDuration('30m')).to.equal(1800);
    expect(parseDuration('3600s')).to.equal(3600);
    for (const bad of ['', '0d', '-1d', '1w', '1.5d', 'd', '90', '1234567d'])
      expect(parseDuration(bad), bad).to.equal(undefined);
  });

  it('stores only the hash', () => {
    expect(hashSecret(secret))
      .to.match(/^[0-9a-f]{64}$/)
      .and.not.equal(secret);
  });
});
