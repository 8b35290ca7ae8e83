import { createServer, type Server } from 'node:http';
import { generateKeyPairSync, randomBytes, createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';

/**
 * A real OpenID provider for the tests: the npm package `oidc-provider` (MIT; an OpenID
 * Foundation certified implementation, by the author of openid-client), on 127.0.0.1 at
 * a free port, with its development interactions.
 *
 * Each instance has confidential clients (client_secret_basic, authorization code only,
 * PKCE required) and accounts from the caller's map, read on every sign-in: change an
 * account's email in the map and the next sign-in gets the new one. Each instance signs
 * with its own new RSA key, so a token of one does not verify with another's keys.
 *
 * ## How a browser drives the provider's forms (devInteractions)
 * After GET /auth/oidc/start the browser lands on the provider's login page
 * (`/interaction/<uid>`):
 *   1. type the account's sub into `input[name="login"]`, anything into
 *      `input[name="password"]` (both are `required`; the password is not checked), and
 *      click `button[type="submit"]` (its text is "Sign-in");
 *   2. the consent page (same path, `input[name="prompt"][value="consent"]`) has one
 *      `button[type="submit"]` ("Continue"): click it;
 *   3. the provider redirects to the query service's /auth/oidc/callback, which redirects
 *      to the console (`/console/#/` or the flow's return_to) with the session cookie.
 * An unknown login is accepted by the form, but the provider then fails the sign-in
 * (findAccount answers nothing).
 *
 * For HTTP tests, `oidcSignIn` (and `oidcSignInFlow`) walks the same forms with a cookie jar.
 */

export interface OidcAccount {
  email?: string;
  email_verified?: boolean;
  xms_edov?: boolean;
  name?: string;
}

export interface OidcClientSpec {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}

export interface TestOidcProvider {
  /** The issuer URL (http://127.0.0.1:PORT), as OIDC_ISSUER. */
  issuer: string;
  /**
   * When set, rewrites the token endpoint's JSON answer before it is sent: stands in for a
   * loopback proxy in front of the token endpoint (bad-input tests swap the ID token).
   */
  tamperToken: ((body: Record<string, unknown>) => Record<string, unknown>) | undefined;
  stop(): Promise<void>;
}

/** Starts a provider with these clients and accounts (sub -> claims; the map is read live). */
export async function startOidcProvider(o: {
  clients: OidcClientSpec[];
  accounts: Map<string, OidcAccount>;
  /** A port of the caller's choosing (default: a free one). */
  port?: number;
}): Promise<TestOidcProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(o.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = {
    ...privateKey.export({ format: 'jwk' }),
    kid: randomBytes(8).toString('hex'),
    alg: 'RS256',
    use: 'sig',
  };
  const config: Configuration = {
    clients: o.clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      redirect_uris: c.redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => true },
    // xms_edov: Entra ID's "email domain verified" (it sends no email_verified).
    claims: { openid: ['sub'], email: ['email', 'email_verified', 'xms_edov'], profile: ['name'] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx: KoaContextWithOIDC, sub: string) => {
      const account = o.accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: () => ({ sub, ...o.accounts.get(sub) }) };
    },
  };
  const provider = new Provider(issuer, config);
  const op: TestOidcProvider = {
    issuer,
    tamperToken: undefined,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  provider.use(async (ctx, next) => {
    await next();
    // The development pages import a web font from a public host: tests reach loopback only.
    if (typeof ctx.body === 'string' && ctx.body.includes('@import url(https://'))
      ctx.body = ctx.body.replace(/@import url\(https:\/\/[^)]*\);?/g, '');
    if (op.tamperToken && ctx.path === '/token' && ctx.status === 200 && typeof ctx.body === 'object')
      ctx.body = op.tamperToken(ctx.body as Record<string, unknown>);
  });
  server.on('request', provider.callback());
  return op;
}

/** A cookie jar for fetch: names to values, from Set-Cookie answers, for one host. */
export class CookieJar {
  readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970|max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export async function get(url: string, jar: CookieJar, headers: Record<string, string> = {}): Promise<Response> {
  const res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(), ...headers } });
  jar.take(res);
  return res;
}

/** The action of the page's form (devInteractions renders one form per page). */
function formAction(html: string, base: string): string {
  const m = /<form[^>]*action="([^"]+)"/.exec(html);
  if (!m) throw new Error(`no form in the provider's page: ${html.slice(0, 300)}`);
  return new URL(m[1]!.replace(/&amp;/g, '&'), base).href;
}

/**
 * Walks the provider from an authorization URL as a browser would (login form with
 * `login` = the account's sub, then consent), with one cookie jar for the provider, and
 * answers the URL the provider finally redirects to (the client's redirect URI with `code`
 * and `state`, or with `error`).
 */
export async function walkProvider(authorizationUrl: string, login: string): Promise<string> {
  const jar = new CookieJar();
  let url = authorizationUrl;
  for (let hop = 0; hop < 20; hop++) {
    const res = await get(url, jar);
    if (res.status >= 300 && res.status < 400) {
      const next = new URL(res.headers.get('location')!, url).href;
      if (!next.startsWith(new URL(authorizationUrl).origin)) return next;
      url = next;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`the provider answered ${res.status}: ${html.slice(0, 300)}`);
    const consent = html.includes('name="prompt" value="consent"');
    const form: Record<string, string> = consent ? { prompt: 'consent' } : { prompt: 'login', login, password: 'any' };
    const posted = await fetch(formAction(html, url), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });
    jar.take(posted);
    if (posted.status < 300 || posted.status >= 400) throw new Error(`the provider's form answered ${posted.status}`);
    url = new URL(posted.headers.get('location')!, url).href;
  }
  throw new Error('too many redirects at the provider');
}

/**
 * Signs in to the query service at `queryUrl` through its SSO (GET /auth/oidc/start ->
 * the provider's forms as `login` -> /auth/oidc/callback) and answers the session cookie
 * as `name=value` for a Cookie header. Throws when the sign-in fails (its answer in the message).
 */
export async function oidcSignIn(queryUrl: string, login: string, o: { startQuery?: string } = {}): Promise<string> {
  const r = await oidcSignInFlow(queryUrl, login, o);
  if (!r.sessionCookie)
    throw new Error(`SSO sign-in of ${login} failed: ${r.callback.status} ${await r.callback.text()}`);
  return r.sessionCookie;
}

/**
 * oidcSignIn, answering the callback's response and the query service's cookie jar too;
 * `sessionCookie` is '' when the sign-in failed.
 */
export async function oidcSignInFlow(
  queryUrl: string,
  login: string,
  o: { startQuery?: string; accept?: string } = {},
): Promise<{ sessionCookie: string; callback: Response; callbackUrl: string; jar: CookieJar }> {
  const jar = new CookieJar();
  // As a browser following the console's own link (an invitation is honoured only from there).
  const start = await get(`${queryUrl}/auth/oidc/start${o.startQuery ?? ''}`, jar, { 'sec-fetch-site': 'same-origin' });
  if (start.status !== 302) throw new Error(`/auth/oidc/start answered ${start.status}: ${await start.text()}`);
  const back = await walkProvider(start.headers.get('location')!, login);
  const callback = await get(back, jar, o.accept ? { accept: o.accept } : {});
  const session = [...jar.cookies].find(([k]) => k.endsWith('session'));
  return { sessionCookie: session ? `${session[0]}=${session[1]}` : '', callback, callbackUrl: back, jar };
}

/**
 * An ID token minted by `op` for the client (a code flow of its own, with this `nonce`):
 * what a bad-input test swaps in for the real one.
 */
export async function mintIdToken(
  op: TestOidcProvider,
  c: OidcClientSpec,
  login: string,
  nonce: string,
): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const auth = new URL(`${op.issuer}/auth`);
  auth.search = new URLSearchParams({
    client_id: c.clientId,
    redirect_uri: c.redirectUris[0]!,
    response_type: 'code',
    scope: 'openid email profile',
    state: randomBytes(8).toString('hex'),
    nonce,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  const back = new URL(await walkProvider(auth.href, login));
  const code = back.searchParams.get('code');
  if (!code) throw new Error(`no code: ${back.href}`);
  const res = await fetch(`${op.issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: c.redirectUris[0]!,
      code_verifier: verifier,
    }).toString(),
  });
  const body = (await res.json()) as { id_token?: string };
  if (!body.id_token) throw new Error(`no ID token: ${JSON.stringify(body)}`);
  return body.id_token;
}
