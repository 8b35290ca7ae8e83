import { expect } from 'chai';
import { newSealingKeyText, parseSealingKeys } from '@telemetry/platform';
import { InvitationLinks, invitationProblem, type InvitationRecord, type SignedInvitation } from '@telemetry/store';

describe('invitation links (unit)', () => {
  const [k1, k2] = [newSealingKeyText('k1'), newSealingKeyText('k2')];
  const links = new InvitationLinks(parseSealingKeys(k1), 'https://telemetry.example.com/');
  const invitation: SignedInvitation = {
    id: 'inv_0123456789abcdef0123',
    tenantId: 'ten_a',
    email: 'ann@example.com',
    role: 'viewer',
    expiresAtMs: Date.parse('2030-01-01T00:00:00Z'),
  };
  const token = links.token(invitation);

  it('links to the console with `<id>.<signature>`; the token verifies for its invitation only', () => {
    expect(links.link(invitation)).to.equal(`https://telemetry.example.com/console/#/invite/${token}`);
    expect(token).to.match(/^inv_0123456789abcdef0123\.[A-Za-z0-9_-]{43}$/);
    expect(links.idOf(token)).to.equal(invitation.id);
    expect(links.verify(token, invitation)).to.equal(true);
    // The email is compared as stored (lower case).
    expect(links.verify(token, { ...invitation, email: 'ANN@example.com' })).to.equal(true);
    for (const other of [
      { tenantId: 'ten_b' },
      { email: 'bob@example.com' },
      { role: 'owner' as const },
      { expiresAtMs: invitation.expiresAtMs + 1000 },
      { id: 'inv_0123456789abcdef0124' },
    ])
      expect(links.verify(token, { ...invitation, ...other }), JSON.stringify(other)).to.equal(false);
  });

  it('forged: a changed signature, another id, another key or garbage is refused before any read', () => {
    const [id, sig] = token.split('.') as [string, string];
    const flip = (s: string, i: number) => `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
    expect(links.idOf(`${id}.${flip(sig, 0)}`)).to.equal(undefined);
    expect(links.idOf(`inv_0123456789abcdef0124.${sig}`)).to.equal(undefined);
    const stranger = new InvitationLinks(parseSealingKeys(k2), 'https://x');
    expect(links.idOf(stranger.token(invitation))).to.equal(undefined);
    for (const junk of ['', '.', token + '=', token.toUpperCase(), `${id}.${sig}.x`, `${id}`])
      expect(links.idOf(junk), junk).to.equal(undefined);
    // The id's half intact, the claim's half changed: the id passes, the invitation does not.
    const tail = `${id}.${flip(sig, 40)}`;
    expect(links.idOf(tail)).to.equal(id);
    expect(links.verify(tail, invitation)).to.equal(false);
  });

  it('every key of the ring verifies; the first signs (rotation keeps sent links working)', () => {
    const rotated = new InvitationLinks(parseSealingKeys(`${k2},${k1}`), 'https://x');
    expect(rotated.verify(token, invitation)).to.equal(true);
    expect(links.verify(rotated.token(invitation), invitation)).to.equal(false);
    expect(rotated.verify(rotated.token(invitation), invitation)).to.equal(true);
  });

  it('expiry, use and revocation are the stored invitation’s, judged at `now`', () => {
    const stored: InvitationRecord = {
      ...invitation,
      invitedBy: 'per_x',
      createdAtMs: 0,
      acceptedAtMs: null,
      revokedAtMs: null,
    };
    expect(invitationProblem(stored, invitation.expiresAtMs - 1)).to.equal(undefined);
    expect(invitationProblem(stored, invitation.expiresAtMs)).to.equal('expired');
    expect(invitationProblem({ ...stored, acceptedAtMs: 1 }, 0)).to.equal('accepted');
    expect(invitationProblem({ ...stored, revokedAtMs: 1 }, 0)).to.equal('revoked');
  });
});
