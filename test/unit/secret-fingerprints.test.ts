import { expect } from 'chai';
import { newSealingKeyText, parseSealingKeys, SecretBox } from '@telemetry/platform';

describe('secret fingerprints (unit)', () => {
  const k1 = newSealingKeyText('k1');
  const k2 = newSealingKeyText('k2');

  it('tell equal values apart from different ones, per context, without showing the value', () => {
    const box = new SecretBox(parseSealingKeys(k1));
    const fp = box.fingerprint('hunter2', 'ten_a');
    expect(fp).to.match(/^fp1\.k1\.[A-Za-z0-9_-]{22}$/);
    expect(fp).to.not.include('hunter2');
    expect(box.fingerprint('hunter2', 'ten_a')).to.equal(fp);
    expect(box.fingerprint('hunter3', 'ten_a')).to.not.equal(fp);
    expect(box.fingerprint('hunter2', 'ten_b')).to.not.equal(fp);
    expect(box.fingerprintMatches(fp, 'hunter2', 'ten_a')).to.equal(true);
    expect(box.fingerprintMatches(fp, 'hunter3', 'ten_a')).to.equal(false);
    expect(box.fingerprintMatches(fp, 'hunter2', 'ten_b')).to.equal(false);
  });

  it('still match after a key rotation (the old key kept in the ring), and not under another ring', () => {
    const before = new SecretBox(parseSealingKeys(k1));
    const fp = before.fingerprint('s3cret', 'ten_a');
    const rotated = new SecretBox(parseSealingKeys(`${k2},${k1}`));
    expect(rotated.fingerprintMatches(fp, 's3cret', 'ten_a')).to.equal(true);
    expect(rotated.fingerprint('s3cret', 'ten_a')).to.match(/^fp1\.k2\./);
    const other = new SecretBox(parseSealingKeys(newSealingKeyText('k1')));
    expect(other.fingerprintMatches(fp, 's3cret', 'ten_a')).to.equal(false);
  });

  it('refuse what is not a fingerprint', () => {
    const box = new SecretBox(parseSealingKeys(k1));
    for (const bad of [
      '',
      'fp1',
      'fp1.k1',
      'fp2.k1.AAAAAAAAAAAAAAAAAAAAAA',
      'fp1.k9.AAAAAAAAAAAAAAAAAAAAAA',
      'fp1.k1.x.y',
    ]) {
      expect(box.fingerprintMatches(bad, 'v', 'ten_a'), bad).to.equal(false);
    }
  });
});
