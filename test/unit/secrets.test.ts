import { expect } from 'chai';
import { newSealingKeyText, parseSealingKeys, SecretBox } from '@telemetry/platform';
import { DEFAULT_MONITOR, MASK, maskUrl, publicMonitor, unmaskPatch, type StoredMonitor } from '@telemetry/store';

const stored: StoredMonitor = {
  ...DEFAULT_MONITOR,
  tenant_id: 'ten_a',
  id: 'mon_a',
  name: 'a',
  url: 'https://bob:hunter2@example.test/x?y=1',
  headers: { Authorization: 'Bearer s3cret', 'X-Api-Key': 'k-123' },
  webhook_secret: 'whsec_abc',
  created_at: '2026-11-22T00:00:00Z',
  updated_at: '2026-11-22T00:00:00Z',
  version: 1,
};

describe('secrets at rest and in answers (unit)', () => {
  it('seals with the first key, opens with any key of the ring, and only in its own context', () => {
    const old = newSealingKeyText('old');
    const next = newSealingKeyText('new');
    const sealedOld = new SecretBox(parseSealingKeys(old)).seal('plain', 'monitors/ten_a/mon_a');
    const ring = new SecretBox(parseSealingKeys(`${next},${old}`));
    expect(ring.open(sealedOld, 'monitors/ten_a/mon_a')).to.equal('plain');
    const sealedNew = ring.seal('plain', 'monitors/ten_a/mon_a');
    expect(sealedNew).to.not.include('plain');
    expect(sealedNew.startsWith('v1.new.'), 'sealed with the first key').to.equal(true);
    expect(() => ring.open(sealedNew, 'monitors/ten_b/mon_a'), 'another context').to.throw();
    const tampered = sealedNew.slice(0, -2) + (sealedNew.endsWith('A') ? 'BB' : 'AA');
    expect(() => ring.open(tampered, 'monitors/ten_a/mon_a'), 'tampered').to.throw();
    expect(() => new SecretBox(parseSealingKeys(old)).open(sealedNew, 'monitors/ten_a/mon_a'), 'retired key').to.throw(
      /does not hold/,
    );
  });

  it('refuses malformed key rings without echoing a key', () => {
    for (const bad of ['', 'k1', 'k1:c2hvcnQ=', 'bad id:' + Buffer.alloc(32).toString('base64')]) {
      expect(() => parseSealingKeys(bad), bad).to.throw();
    }
    const dup = `${newSealingKeyText('k')},${newSealingKeyText('k')}`;
    expect(() => parseSealingKeys(dup)).to.throw(/differ/);
    try {
      parseSealingKeys('k1:c2hvcnQ=');
    } catch (err) {
      expect(String(err)).to.not.include('c2hvcnQ');
    }
  });

  it('masks header values and URL passwords in answers, and shows the webhook secret only when asked', () => {
    const shown = publicMonitor(stored);
    expect(shown.headers).to.deep.equal({ Authorization: MASK, 'X-Api-Key': MASK });
    expect(shown.url).to.equal('https://bob:****@example.test/x?y=1');
    expect(shown).to.not.have.property('webhook_secret');
    expect(JSON.stringify(shown)).to.not.match(/s3cret|k-123|hunter2|whsec_abc/);
    expect(publicMonitor(stored, {}, true).webhook_secret).to.equal('whsec_abc');
    expect(maskUrl('https://example.test/')).to.equal('https://example.test/');
  });

  it('keeps a stored secret when a PATCH sends back its mask, and replaces it otherwise', () => {
    const patch = unmaskPatch(stored, {
      url: 'https://bob:****@example.test/x?y=1',
      headers: { authorization: MASK, 'X-New': 'v' },
    });
    expect(patch.url).to.equal(stored.url);
    expect(patch.headers).to.deep.equal({ authorization: 'Bearer s3cret', 'X-New': 'v' });
    expect(unmaskPatch(stored, { headers: { 'X-Other': MASK } }).headers, 'no such header: as sent').to.deep.equal({
      'X-Other': MASK,
    });
    expect(unmaskPatch(stored, { url: 'https://example.test/new' }).url).to.equal('https://example.test/new');
  });
});
