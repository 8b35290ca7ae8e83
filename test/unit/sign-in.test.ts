import { expect } from 'chai';
import type { Response } from 'express';
import {
  decayedFailures,
  passwordProblem,
  SIGN_IN_THROTTLE,
  throttleAddress,
  throttleBuckets,
  throttleDelaySeconds,
  totpCode,
  totpStep,
} from '@telemetry/store';
import {
  clearSessionCookie,
  cookieSecure,
  setSessionCookie,
} from '../../services/query-service/src/access/session-cookie.js';
import { resetLink } from '../../services/query-service/src/account.route.js';

/** Sign-in's arithmetic and rules (docs/access.md, "Passwords", "Sessions"). */
describe('sign-in: throttle arithmetic, password rules, TOTP steps, the session cookie', () => {
  const { account, pair, address } = SIGN_IN_THROTTLE;

  it('lets the free failures through, then doubles the delay up to the cap', () => {
    expect([1, 2, 3, 4, 5].map((n) => throttleDelaySeconds(account, n))).to.deep.equal([0, 0, 0, 0, 0]);
    expect([6, 7, 8, 9, 10, 11, 12, 1000].map((n) => throttleDelaySeconds(account, n))).to.deep.equal([
      1, 2, 4, 8, 16, 30, 30, 30,
    ]);
    expect([3, 4, 5, 6, 13, 14, 15].map((n) => throttleDelaySeconds(pair, n))).to.deep.equal([
      0, 1, 2, 4, 512, 900, 900,
    ]);
    expect(throttleDelaySeconds(address, 100)).to.equal(0);
    expect(throttleDelaySeconds(address, 101)).to.equal(1);
    expect(throttleDelaySeconds(address, 10_000)).to.equal(900);
  });

  it('is no lockout: the account waits at most 30 s, one address at most 15 minutes', () => {
    expect(account.capSeconds).to.equal(30);
    expect(pair.capSeconds).to.equal(900);
    expect(address.capSeconds).to.equal(900);
    // A guesser from one address is held by the pair before the account's delay starts.
    expect(pair.free).to.be.lessThan(account.free);
  });

  it('forgets one failure per decay period since the last one', () => {
    expect(decayedFailures(account, 10, 0)).to.equal(10);
    expect(decayedFailures(account, 10, 59.9)).to.equal(10);
    expect(decayedFailures(account, 10, 60)).to.equal(9);
    expect(decayedFailures(account, 10, 10 * 60)).to.equal(0);
    expect(decayedFailures(account, 10, 1e9)).to.equal(0);
    expect(decayedFailures(pair, 4, 299)).to.equal(4);
    expect(decayedFailures(pair, 4, -5)).to.equal(4);
  });

  it('names the three buckets of an email and an address', () => {
    expect(throttleBuckets('a@example.com', '127.0.0.1')).to.deep.equal({
      account: 'account:a@example.com',
      address: 'address:127.0.0.1',
      pair: 'pair:a@example.com|127.0.0.1',
    });
    const long = throttleBuckets('x'.repeat(1000), 'y'.repeat(1000));
    expect(Math.max(...Object.values(long).map((b) => b.length))).to.be.at.most(600);
  });

  it('counts an IPv6 client by its /64 and a v4-mapped address as IPv4', () => {
    expect(throttleAddress('203.0.113.7')).to.equal('203.0.113.7');
    expect(throttleAddress('::ffff:203.0.113.7')).to.equal('203.0.113.7');
    expect(throttleAddress('2001:db8:0:1:aaaa:bbbb:cccc:dddd')).to.equal('2001:db8:0:1::/64');
    expect(throttleAddress('2001:0db8:0000:0001::1')).to.equal('2001:db8:0:1::/64');
    expect(throttleAddress('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(throttleAddress('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(throttleAddress('::1')).to.equal('0:0:0:0::/64');
    expect(throttleAddress('')).to.equal('');
  });

  it('says why a password may not be new: too short, too long, common (any case)', () => {
    expect(passwordProblem('eleven char')).to.equal('too_short');
    expect(passwordProblem('twelve chars')).to.equal(undefined);
    // Code points, not UTF-16 units: twelve emoji are twelve characters.
    expect(passwordProblem('🔑'.repeat(11))).to.equal('too_short');
    expect(passwordProblem('🔑'.repeat(12))).to.equal(undefined);
    expect(passwordProblem('x'.repeat(257))).to.equal('too_long');
    expect(passwordProblem('x'.repeat(256))).to.equal(undefined);
    expect(passwordProblem('password1234')).to.equal('common');
    expect(passwordProblem('PASSWORD1234')).to.equal('common');
  });

  it('accepts a TOTP code one step either side, and names its step', () => {
    const secret = 'JBSWY3DPEHPK3PXP';
    const now = 1_800_000_015_000;
    const step = Math.floor(now / 30_000);
    expect(totpStep(secret, totpCode(secret, now), now)).to.equal(step);
    expect(totpStep(secret, totpCode(secret, now - 30_000), now)).to.equal(step - 1);
    expect(totpStep(secret, totpCode(secret, now + 30_000), now)).to.equal(step + 1);
    expect(totpStep(secret, totpCode(secret, now + 60_000), now)).to.equal(undefined);
    expect(totpStep(secret, 'abcdef', now)).to.equal(undefined);
    // RFC 6238's SHA-1 vector (secret "12345678901234567890", T = 59 s), in 6 digits.
    expect(totpCode('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ', 59_000)).to.equal('287082');
  });

  it('makes the cookie Secure and __Host- for an https PUBLIC_URL, plain on loopback http', () => {
    expect(cookieSecure('http://127.0.0.1:8082')).to.equal(false);
    expect(cookieSecure('http://localhost:8082')).to.equal(false);
    expect(cookieSecure('http://[::1]:8082')).to.equal(false);
    expect(cookieSecure('https://telemetry.example.com')).to.equal(true);
    expect(cookieSecure('http://telemetry.example.com')).to.equal(true);
    const headers: string[] = [];
    const res = { append: (_name: string, value: string) => headers.push(value) } as unknown as Response;
    setSessionCookie(res, 'tok', Date.UTC(2030, 0, 1), cookieSecure('https://telemetry.example.com'));
    expect(headers[0]).to.equal(
      '__Host-telemetry_session=tok; Path=/; Expires=Tue, 01 Jan 2030 00:00:00 GMT; HttpOnly; Secure; SameSite=Lax',
    );
    clearSessionCookie(res, true);
    expect(headers[1]).to.match(
      /^__Host-telemetry_session=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Lax$/,
    );
    setSessionCookie(res, 'tok', Date.UTC(2030, 0, 1), false);
    expect(headers[2]).to.equal(
      'telemetry_session=tok; Path=/; Expires=Tue, 01 Jan 2030 00:00:00 GMT; HttpOnly; SameSite=Lax',
    );
  });

  it('links a reset to the console under PUBLIC_URL', () => {
    expect(resetLink('https://t.example.com/', 'abc')).to.equal('https://t.example.com/console/#/reset/abc');
  });
});
