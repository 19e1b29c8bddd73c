// JSON schemas of the sign-in at an identity provider (contract §10): the providers, start, callback.
import type { FastifySchema } from 'fastify';
import { API_ERRORS } from '../http/api-errors.ts';
import { detail, unavailable } from '../http/openapi.ts';

// contract §10: the provider's name as AUTH_CONFIG gives it.
const providerName = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'The provider, as AUTH_CONFIG names it.', examples: ['school'] },
  },
  required: ['name'],
};

const redirect = (description: string) => ({
  description,
  headers: { location: { schema: { type: 'string' } } },
  type: 'null',
});

export const OIDC_SCHEMAS = {
  providers: {
    summary: 'The identity providers people can sign in at (contract §10); [] when none is configured.',
    tags: ['auth'],
    response: {
      200: {
        description:
          'One button each. X-Password-Login says whether POST /api/auth/login has a password backend to ask; X-Passkeys whether passkeys are on (contract §12).',
        headers: {
          'x-password-login': { schema: { type: 'string', enum: ['true', 'false'] } },
          'x-passkeys': { schema: { type: 'string', enum: ['true', 'false'] } },
        },
        type: 'array',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', examples: ['school'] },
            label: { type: 'string', examples: ['Sign in with School'] },
          },
          required: ['name', 'label'],
          additionalProperties: false,
        },
      },
    },
  },
  oidcStart: {
    summary: 'Start signing in at an identity provider: a redirect to its authorization endpoint.',
    description:
      'Sets the short-lived state cookie oidc_flow (HttpOnly, Path=/api/auth/oidc/, 10 minutes) naming this sign-in; state, nonce and a PKCE S256 challenge go to the provider. If the provider cannot be reached, redirects to /?signin=failed.',
    tags: ['auth'],
    params: providerName,
    querystring: {
      type: 'object',
      properties: {
        next: {
          type: 'string',
          description: 'Where to go once signed in: a local path (anything else is /).',
          examples: ['/group/7'],
        },
      },
    },
    response: {
      302: redirect('To the provider (or to /?signin=failed).'),
      404: { description: 'No provider of that name.', ...detail(API_ERRORS.NOT_FOUND.detail) },
      503: unavailable,
    },
  },
  oidcCallback: {
    summary:
      'Where the identity provider sends the browser back: the session starts, as after a password login.',
    description:
      "The state must be the one of the browser's oidc_flow cookie (once only), the iss parameter this provider's (RFC 9207), the code is exchanged with client authentication and the PKCE verifier, and the ID token verified. Success: csrftoken and sessionid set, a redirect to next. Any failure: a redirect to /?signin=failed and no session.",
    tags: ['auth'],
    params: providerName,
    querystring: {
      type: 'object',
      properties: {
        code: { type: 'string' },
        state: { type: 'string' },
        iss: { type: 'string' },
        error: { type: 'string' },
        error_description: { type: 'string' },
      },
    },
    response: {
      302: redirect('To next (signed in), or to /?signin=failed.'),
      404: { description: 'No provider of that name.', ...detail(API_ERRORS.NOT_FOUND.detail) },
      503: unavailable,
    },
  },
} as const satisfies Record<string, FastifySchema>;
