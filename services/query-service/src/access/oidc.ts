import * as client from 'openid-client';
import { AppError, type Logger } from '@telemetry/platform';
import { cookieSecure } from './session-cookie.js';

/**
 * The relying party of single sign-on (docs/access.md, "Single sign-on"), with
 * `openid-client` (MIT; certified by the OpenID Foundation as a relying party, and kept by
 * the author of oidc-provider). The provider is found by discovery of OIDC_ISSUER, lazily
 * on first use and cached; a failed discovery is tried again on the next use, so this
 * service starts (and password sign-in works) while the provider is down.
 */

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Empty: a public client (PKCE only). */
  clientSecret: string;
  scopes: string;
  /** PUBLIC_URL: where the provider sends the browser back (`/auth/oidc/callback`). */
  publicUrl: string;
  /** Deadline of each request to the provider. */
  timeoutMs: number;
}

/** What the sign-in learned of the person from the provider (the ID token, else userinfo). */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
  name: string;
}

/** A flow's secrets: sent (state, nonce, the PKCE challenge) and kept (the verifier). */
export interface OidcFlowSecrets {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Whether requests to the issuer may be plain http: only on a loopback address (tests, a local provider). */
export function insecureAllowed(issuer: string): boolean {
  // The same rule as the cookie's: plain http is for loopback only.
  return !cookieSecure(issuer);
}

/** The redirect URI to register at the provider. */
export function redirectUriOf(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/auth/oidc/callback`;
}

/** An error of the provider's network (not an answer): SSO_UNAVAILABLE rather than OIDC_FAILED. */
function unreachable(err: unknown): boolean {
  if (err instanceof client.ClientError) return false;
  if (err instanceof client.AuthorizationResponseError || err instanceof client.ResponseBodyError) return false;
  const name = (err as { name?: unknown } | null)?.name;
  return err instanceof TypeError || name === 'TimeoutError' || name === 'AbortError';
}

/**
 * The library's code, the provider's OAuth error (`invalid_grant`: a code, verifier or
 * redirect URI it refused) and, for a claim check, the claim (openid-client wraps
 * oauth4webapi's error in `cause`).
 */
function reasonOf(err: unknown): { code?: unknown; claim?: unknown; error?: unknown; why?: string } {
  const out: { code?: unknown; claim?: unknown; error?: unknown; why?: string } = {};
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; i++) {
    out.code ??= e.code;
    const { claim, error } = e as { claim?: unknown; error?: unknown };
    if (claim !== undefined) out.claim ??= claim;
    if (typeof error === 'string') out.error ??= error;
    if (i > 0 && typeof e.message === 'string') out.why ??= e.message;
    e = e.cause as typeof e;
  }
  return out;
}

export class OidcRelyingParty {
  private discovered: Promise<client.Configuration> | undefined;

  constructor(
    private readonly settings: OidcSettings,
    private readonly logger: Logger,
  ) {
    // A bad setting stops the service at start, naming the variable.
    if (settings.clientId === '') throw new Error('OIDC_CLIENT_ID must be set when OIDC_ISSUER is');
    const u = new URL(settings.issuer);
    if (u.protocol !== 'https:' && !insecureAllowed(settings.issuer))
      throw new Error('OIDC_ISSUER must be https (plain http only on a loopback address)');
    if (!settings.scopes.split(' ').includes('openid')) throw new Error('OIDC_SCOPES must include openid');
  }

  /** The provider's configuration: discovered once; a failure is forgotten so the next use tries again. */
  configuration(): Promise<client.Configuration> {
    if (!this.discovered) {
      const s = this.settings;
      const execute = [client.enableNonRepudiationChecks];
      if (insecureAllowed(s.issuer)) execute.push(client.allowInsecureRequests);
      const pending = client
        .discovery(
          new URL(s.issuer),
          s.clientId,
          s.clientSecret === '' ? undefined : s.clientSecret,
          s.clientSecret === '' ? client.None() : client.ClientSecretBasic(s.clientSecret),
          { execute, timeout: Math.ceil(s.timeoutMs / 1000) },
        )
        .catch((err: unknown) => {
          this.discovered = undefined;
          this.logger.warn('OIDC discovery failed', { issuer: s.issuer, err: String(err) });
          throw new AppError(
            'SSO_UNAVAILABLE',
            'the identity provider did not answer; retry, or sign in with email and password',
            undefined,
            { 'Retry-After': '5' },
          );
        });
      this.discovered = pending;
    }
    return this.discovered;
  }

  /** New secrets for a flow, and the provider's authorization URL carrying them (PKCE S256). */
  async begin(): Promise<{ secrets: OidcFlowSecrets; url: string }> {
    const config = await this.configuration();
    const secrets = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      codeVerifier: client.randomPKCECodeVerifier(),
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUriOf(this.settings.publicUrl),
      scope: this.settings.scopes,
      state: secrets.state,
      nonce: secrets.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(secrets.codeVerifier),
      code_challenge_method: 'S256',
    });
    return { secrets, url: url.href };
  }

  /**
   * Exchanges the callback's code (its query string `search`) for tokens, validating the
   * ID token's issuer, audience, nonce, expiry and signature (the provider's keys), and the
   * response's state. OIDC_FAILED when anything does not hold; SSO_UNAVAILABLE when the
   * provider does not answer.
   */
  async finish(search: string, secrets: OidcFlowSecrets): Promise<OidcIdentity> {
    const config = await this.configuration();
    const current = new URL(`${redirectUriOf(this.settings.publicUrl)}${search}`);
    try {
      const tokens = await client.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: secrets.codeVerifier,
        expectedState: secrets.state,
        expectedNonce: secrets.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new Error('no ID token');
      let info: Record<string, unknown> = claims;
      // Some providers put the email in userinfo only (it answers for the same subject, checked).
      if (claims.email === undefined && tokens.access_token)
        info = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
      return {
        issuer: claims.iss,
        subject: claims.sub,
        email: typeof info.email === 'string' && info.email.includes('@') ? info.email : undefined,
        // Entra ID sends no email_verified; its optional claim xms_edov says the tenant verified the domain.
        emailVerified: info.email_verified === true || info.xms_edov === true,
        name: typeof info.name === 'string' ? info.name : '',
      };
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (unreachable(err)) {
        this.logger.warn('OIDC token exchange failed', { err: String(err) });
        throw new AppError('SSO_UNAVAILABLE', 'the identity provider did not answer; sign in again', undefined, {
          'Retry-After': '5',
        });
      }
      // The reason is logged, not answered: it may name what an attacker tried.
      this.logger.warn('OIDC sign-in refused', { err: String(err), ...reasonOf(err) });
      throw new AppError(
        'OIDC_FAILED',
        "the identity provider's answer did not validate; sign in again from the start",
      );
    }
  }
}
