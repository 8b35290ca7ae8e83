import { csrfHeader, header } from './parameters.js';
import { bodyErrors, envelopeOf, errors, jsonBody, jsonOk, ref, storeErrors, type Json } from './responses.js';

/**
 * Password sign-in, the session, reset by email and the person's own account in the
 * OpenAPI document (docs/access.md, "Signing in", "Sessions"; docs/api.md). The session
 * routes take the session cookie (not an API key); their writes need X-CSRF-Token.
 */

const session = [{ sessionCookie: [] }];
const csrf = [csrfHeader(true)];
/** The bodies are closed JSON Schemas (access-api-schemas.ts): a field the route does not know is refused. */
const body = jsonBody;
const empty = (description: string): Json =>
  jsonOk(description, envelopeOf({ type: 'object', additionalProperties: false, maxProperties: 0 }));
const sessionView = ref('Session');
const signedIn = jsonOk('Signed in; Set-Cookie carries the session.', envelopeOf(sessionView), {
  'Set-Cookie': header('telemetry_session (or __Host-telemetry_session): HttpOnly, SameSite=Lax, Path=/.'),
});
const sessionErrors = (...more: Parameters<typeof errors>[0]): Json =>
  errors(['MISSING_CREDENTIALS', 'SESSION_EXPIRED', ...more, ...storeErrors]);
const writeErrors = (...more: Parameters<typeof errors>[0]): Json =>
  sessionErrors('CSRF_FAILED', ...bodyErrors, ...more);

/** A TOTP route taking `{code}` (400 VALIDATION_FAILED at /code when it is not the current one). */
function withCode(operationId: string, summary: string, done: string): Json {
  return {
    operationId,
    summary,
    security: session,
    parameters: csrf,
    requestBody: body('TotpCode'),
    responses: { '200': empty(done), ...writeErrors('SIGN_IN_THROTTLED') },
  };
}

export const sessionPaths: Json = {
  '/api/session/password': {
    post: {
      operationId: 'signInWithPassword',
      summary: 'Sign in with email and password (and a TOTP code when two-step sign-in is on)',
      description:
        'Throttled: failed sign-ins per account, per address and per pair delay further attempts (429 with Retry-After; nobody is locked out). An unknown email and a wrong password answer the same SIGN_IN_FAILED. The session is in `tenant_id` when the person is a member there, else in their oldest membership.',
      security: [],
      requestBody: body('PasswordSignIn'),
      responses: {
        '200': signedIn,
        ...errors([
          'SIGN_IN_FAILED',
          'TOTP_REQUIRED',
          'NOT_A_MEMBER',
          'SIGN_IN_THROTTLED',
          ...bodyErrors,
          ...storeErrors,
        ]),
      },
    },
  },
  '/api/session': {
    get: {
      operationId: 'getSession',
      summary: 'Who is signed in, where, with what role and CSRF token',
      security: session,
      responses: { '200': jsonOk('The session.', envelopeOf(sessionView)), ...sessionErrors() },
    },
    delete: {
      operationId: 'signOut',
      summary: 'Sign out (ends this session, clears the cookie)',
      security: session,
      parameters: csrf,
      responses: { '200': empty('Signed out.'), ...writeErrors() },
    },
  },
  '/api/session/sign-out-everywhere': {
    post: {
      operationId: 'signOutEverywhere',
      summary: 'End every session of the signed-in person, in every tenant (this one too)',
      security: session,
      parameters: csrf,
      responses: {
        '200': jsonOk(
          'How many sessions ended.',
          envelopeOf({ type: 'object', required: ['ended'], properties: { ended: { type: 'integer' } } }),
        ),
        ...writeErrors(),
      },
    },
  },
  '/api/session/tenant': {
    post: {
      operationId: 'switchTenant',
      summary: 'Move the session to another tenant the person is a member of',
      security: session,
      parameters: csrf,
      requestBody: body('TenantSwitch'),
      responses: { '200': jsonOk('The session, now there.', envelopeOf(sessionView)), ...writeErrors('NOT_A_MEMBER') },
    },
  },
  '/api/password-resets': {
    post: {
      operationId: 'requestPasswordReset',
      summary: 'Mail a password-reset link (202 whether or not the email has an account)',
      security: [],
      requestBody: body('PasswordResetRequest'),
      responses: { '202': empty('Accepted; a link is mailed when the email has an account.'), ...errors(bodyErrors) },
    },
  },
  '/api/password-resets/confirm': {
    post: {
      operationId: 'confirmPasswordReset',
      summary: "Set a new password with a reset link's token (once); ends every session of the person",
      security: [],
      requestBody: body('PasswordResetConfirm'),
      responses: {
        '200': empty('The password is changed.'),
        ...errors(['RESET_LINK_INVALID', 'WEAK_PASSWORD', ...bodyErrors, ...storeErrors]),
      },
    },
  },
  '/api/me/password': {
    put: {
      operationId: 'changePassword',
      summary: "Change the signed-in person's password (their other sessions end)",
      security: session,
      parameters: csrf,
      requestBody: body('PasswordChange'),
      responses: { '200': empty('Changed.'), ...writeErrors('WEAK_PASSWORD', 'SIGN_IN_THROTTLED') },
    },
  },
  '/api/me/totp': {
    post: {
      operationId: 'startTotp',
      summary: 'A new TOTP secret, pending until POST /api/me/totp/enable with a correct code',
      security: session,
      parameters: csrf,
      responses: {
        '200': jsonOk(
          'The secret (base32) and its otpauth:// URL (a QR code of it sets up an authenticator app).',
          envelopeOf({
            type: 'object',
            required: ['secret', 'otpauth_url'],
            properties: { secret: { type: 'string' }, otpauth_url: { type: 'string' } },
          }),
        ),
        ...writeErrors(),
      },
    },
    delete: withCode(
      'disableTotp',
      'Turn two-step sign-in off (with a current code and the current password; wrong ones count as failed sign-ins)',
      'Off.',
    ),
  },
  '/api/me/totp/enable': {
    post: withCode(
      'enableTotp',
      'Turn two-step sign-in on with a correct code of the pending secret and the current password (wrong ones count as failed sign-ins)',
      'On.',
    ),
  },
};
