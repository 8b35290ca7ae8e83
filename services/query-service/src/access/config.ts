import { v } from '@telemetry/platform';

/** People, sign-in and sessions (docs/access.md); PUBLIC_URL (the alerting spec) is where links and SSO return to. */
export const accessSpec = {
  sessionIdleSeconds: v.int(
    'SESSION_IDLE_SECONDS',
    12 * 3600,
    'a session unused for this long ends (idle expiry); the console signs in again',
    60,
    30 * 86_400,
  ),
  sessionMaxSeconds: v.int(
    'SESSION_MAX_SECONDS',
    14 * 86_400,
    'a session ends this long after sign-in however much it is used (absolute expiry)',
    300,
    365 * 86_400,
  ),
  invitationTtlSeconds: v.int(
    'INVITATION_TTL_SECONDS',
    7 * 86_400,
    'an invitation link works this long after it is sent, once',
    300,
    90 * 86_400,
  ),
  passwordResetTtlSeconds: v.int(
    'PASSWORD_RESET_TTL_SECONDS',
    3600,
    'a password-reset link works this long after it is sent, once',
    300,
    7 * 86_400,
  ),
  oidcIssuer: v.str(
    'OIDC_ISSUER',
    '',
    "single sign-on: the OpenID provider's issuer URL, read by discovery (`/.well-known/openid-configuration`); empty: no SSO. HTTPS, or http on a loopback address only",
    /^$|^https?:\/\/[^\s]{1,500}$/,
  ),
  oidcClientId: v.str('OIDC_CLIENT_ID', '', 'single sign-on: the client id registered at the provider'),
  oidcClientSecret: v.secret(
    'OIDC_CLIENT_SECRET',
    '',
    'single sign-on: its client secret (empty: a public client, PKCE only)',
  ),
  oidcDisplayName: v.str('OIDC_DISPLAY_NAME', 'Single sign-on', "the label of the sign-in page's SSO button"),
  oidcScopes: v.str(
    'OIDC_SCOPES',
    'openid email profile',
    'scopes asked of the provider (openid and email are needed)',
    /^[\x21-\x7e]+( [\x21-\x7e]+)*$/,
  ),
};
