import { expect } from 'chai';
import type { Request } from 'express';
import { csrfProblem, sessionToken, type SignedIn } from '../../services/query-service/src/access/principal.js';
import { cookieSecure } from '../../services/query-service/src/access/session-cookie.js';
import { fromOurPage } from '../../services/query-service/src/oidc.route.js';

/** A request as Express shows it behind a TLS proxy: plain http, the proxy's Host, the browser's headers. */
function proxied(headers: Record<string, string>): Request {
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  return { protocol: 'http', get: (name: string) => lower.get(name.toLowerCase()) } as unknown as Request;
}

const session = { csrfToken: 'the-csrf-token' } as SignedIn;

/** The session cookie and the CSRF check (docs/access.md, "Sessions"). */
describe('access: the session cookie read and the CSRF check', () => {
  const publicUrl = 'https://console.example.test';
  const deps = { origin: new URL(publicUrl).origin, secureCookie: cookieSecure(publicUrl) };

  it('accepts a write from PUBLIC_URL’s origin behind a TLS proxy (the request itself is http)', () => {
    const req = proxied({
      host: 'console.example.test',
      origin: 'https://console.example.test',
      'sec-fetch-site': 'same-origin',
      'x-csrf-token': 'the-csrf-token',
    });
    expect(csrfProblem(deps, req, session)).to.equal(undefined);
    // Without the token it is still refused.
    expect(csrfProblem(deps, proxied({ host: 'console.example.test', origin: publicUrl }), session)).to.match(/CSRF/);
  });

  it('refuses any other origin, even one matching the request’s own protocol and Host', () => {
    for (const origin of ['http://127.0.0.1:9999', 'http://console.example.test', 'https://evil.example.test', 'null'])
      expect(
        csrfProblem(deps, proxied({ host: 'console.example.test', origin, 'x-csrf-token': 'the-csrf-token' }), session),
        origin,
      ).to.match(/may not change anything here/);
    // A direct (unproxied) request on another port whose Origin equals its own Host: not ours.
    const direct = proxied({
      host: '127.0.0.1:9999',
      origin: 'http://127.0.0.1:9999',
      'x-csrf-token': 'the-csrf-token',
    });
    expect(csrfProblem(deps, direct, session)).to.match(/may not change anything here/);
  });

  it('reads only the __Host- cookie when the cookie is Secure; only the plain one when it is not', () => {
    const both = proxied({ cookie: '__Host-telemetry_session=hosted; telemetry_session=planted' });
    const planted = proxied({ cookie: 'telemetry_session=planted' });
    expect(sessionToken({ secureCookie: true }, both)).to.equal('hosted');
    expect(sessionToken({ secureCookie: true }, planted), 'a sibling subdomain’s cookie').to.equal(undefined);
    expect(sessionToken({ secureCookie: false }, planted)).to.equal('planted');
    expect(sessionToken({ secureCookie: false }, both)).to.equal('planted');
  });

  it('honours an SSO invitation start only from our own page', () => {
    const origin = 'https://console.example.test';
    expect(fromOurPage(proxied({ 'sec-fetch-site': 'same-origin' }), origin)).to.equal(true);
    expect(fromOurPage(proxied({ 'sec-fetch-site': 'cross-site', referer: `${origin}/console/` }), origin)).to.equal(
      false,
    );
    expect(fromOurPage(proxied({ 'sec-fetch-site': 'none' }), origin), 'a link typed or pasted').to.equal(false);
    expect(fromOurPage(proxied({ 'sec-fetch-site': 'same-site' }), origin)).to.equal(false);
    expect(fromOurPage(proxied({ referer: `${origin}/console/#/invite/x` }), origin)).to.equal(true);
    expect(fromOurPage(proxied({ referer: 'https://mail.example.test/' }), origin)).to.equal(false);
    expect(fromOurPage(proxied({ referer: 'not a url' }), origin)).to.equal(false);
    expect(fromOurPage(proxied({}), origin)).to.equal(false);
  });
});
