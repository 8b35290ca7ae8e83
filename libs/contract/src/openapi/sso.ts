import { envelopeOf, errors, jsonOk, type Json } from './responses.js';

/**
 * Single sign-on's routes in the OpenAPI document (docs/access.md, "Single sign-on"):
 * public, browser-driven (redirects), no credentials.
 */

const redirect = (description: string): Json => ({
  description,
  headers: {
    Location: { schema: { type: 'string' } },
    'Set-Cookie': { schema: { type: 'string' }, description: 'The flow cookie, or the session cookie' },
  },
});

const failures = errors(['SSO_NOT_CONFIGURED', 'SSO_UNAVAILABLE', 'REGISTRY_UNAVAILABLE', 'INTERNAL_ERROR']);

export const ssoPaths: Json = {
  '/api/sso': {
    get: {
      operationId: 'getSso',
      summary: "Whether single sign-on is configured, and its button's label",
      security: [],
      responses: {
        '200': jsonOk(
          'SSO settings.',
          envelopeOf({
            type: 'object',
            required: ['enabled', 'name'],
            additionalProperties: false,
            properties: { enabled: { type: 'boolean' }, name: { type: 'string' } },
          }),
        ),
      },
    },
  },
  '/auth/oidc/start': {
    get: {
      operationId: 'startSso',
      summary: 'Starts an OpenID Connect sign-in (browser)',
      description:
        'Redirects to the identity provider (authorization code, PKCE S256, state, nonce) and sets a 10-minute browser-binding cookie. A browser (Accept: text/html) gets failures as a redirect to /console/#/sign-in?error=CODE.',
      security: [],
      parameters: [
        {
          name: 'return_to',
          in: 'query',
          schema: { type: 'string', maxLength: 1000 },
          description: 'A path of this origin under /console/ to return to; anything else returns to /console/#/',
        },
        {
          name: 'invitation',
          in: 'query',
          schema: { type: 'string', maxLength: 2000 },
          description:
            "An invitation link's token: the sign-in accepts it when the request comes from this origin's own page (Sec-Fetch-Site: same-origin, or without it a Referer of PUBLIC_URL's origin); otherwise 302 to its preview /console/#/invite/<token>, and no sign-in starts",
        },
      ],
      responses: {
        '302': redirect("To the identity provider; with an invitation from elsewhere, to the invitation's preview."),
        ...failures,
      },
    },
  },
  '/auth/oidc/callback': {
    get: {
      operationId: 'finishSso',
      summary: 'Where the identity provider returns the browser',
      description:
        "Takes the flow of `state` once, checks the browser cookie, exchanges the code and validates the ID token (issuer, audience, nonce, signature), then signs the person in and redirects to the flow's return_to. A browser (Accept: text/html) gets failures as a redirect to /console/#/sign-in?error=CODE.",
      security: [],
      parameters: [
        { name: 'state', in: 'query', schema: { type: 'string', maxLength: 200 } },
        { name: 'code', in: 'query', schema: { type: 'string' } },
      ],
      responses: {
        '302': redirect('Signed in: to return_to, with the session cookie; or a browser refused: to the sign-in page.'),
        ...errors([
          'OIDC_FAILED',
          'INVITATION_INVALID',
          'NOT_A_MEMBER',
          'ALREADY_MEMBER',
          'SSO_NOT_CONFIGURED',
          'SSO_UNAVAILABLE',
          'REGISTRY_UNAVAILABLE',
          'INTERNAL_ERROR',
        ]),
      },
    },
  },
};
