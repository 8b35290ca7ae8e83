import { expect } from 'chai';
import { createLogger } from '@telemetry/platform';
import { insecureAllowed, OidcRelyingParty, redirectUriOf } from '../../services/query-service/src/access/oidc.js';
import { safeReturnTo } from '../../services/query-service/src/oidc.route.js';

/** Single sign-on's pure rules: where a sign-in may return to, when plain http is allowed, bad settings. */
describe('single sign-on rules', () => {
  const publicUrl = 'https://telemetry.example.com';

  it('returns only to a /console/ path of this origin', () => {
    expect(safeReturnTo('/console/#/monitors/mon_1?x=1', publicUrl)).to.equal('/console/#/monitors/mon_1?x=1');
    expect(safeReturnTo('/console/', publicUrl)).to.equal('/console/');
    for (const bad of [
      undefined,
      ['/console/'],
      '',
      '/',
      '/api/monitors',
      '/consolex/',
      'https://evil.example/console/',
      '//evil.example/console/',
      '///evil.example/console/',
      '/\\evil.example/console/',
      '/console/\\..\\..\\x',
      '/console/\t/x',
      '/console/../api/keys',
      'javascript:alert(1)',
      `/console/${'a'.repeat(1000)}`,
    ])
      expect(safeReturnTo(bad, publicUrl), String(bad)).to.equal('/console/#/');
  });

  it('allows plain http only for a loopback issuer', () => {
    expect(insecureAllowed('http://127.0.0.1:9000')).to.equal(true);
    expect(insecureAllowed('http://localhost:9000/realms/x')).to.equal(true);
    expect(insecureAllowed('http://[::1]:9000')).to.equal(true);
    expect(insecureAllowed('http://idp.example.com')).to.equal(false);
    expect(insecureAllowed('https://127.0.0.1')).to.equal(false);
  });

  it('registers PUBLIC_URL/auth/oidc/callback as the redirect URI', () => {
    expect(redirectUriOf('https://t.example.com/')).to.equal('https://t.example.com/auth/oidc/callback');
  });

  it('refuses bad settings at start, naming the variable', () => {
    const logger = createLogger({ service: 'test', level: 'silent' });
    const ok = {
      issuer: 'https://idp.example.com',
      clientId: 'c',
      clientSecret: 's',
      scopes: 'openid email',
      publicUrl,
      timeoutMs: 1000,
    };
    expect(() => new OidcRelyingParty(ok, logger)).to.not.throw();
    expect(() => new OidcRelyingParty({ ...ok, clientId: '' }, logger)).to.throw(/OIDC_CLIENT_ID/);
    expect(() => new OidcRelyingParty({ ...ok, issuer: 'http://idp.example.com' }, logger)).to.throw(/OIDC_ISSUER/);
    expect(() => new OidcRelyingParty({ ...ok, scopes: 'email' }, logger)).to.throw(/OIDC_SCOPES/);
  });
});
