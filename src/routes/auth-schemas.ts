// JSON schemas of /api/auth/check, /api/auth/login and /api/auth/logout (contract §3): Fastify shapes
// the responses with them and @fastify/swagger publishes them in /api/schema.
import type { FastifySchema } from 'fastify';
import { PASSWORD_MAX_LENGTH } from '../auth/credentials.ts';
import { API_ERROR_TEMPLATES, API_ERRORS } from '../http/api-errors.ts';
import { cookieAuth, detail, unavailable } from '../http/openapi.ts';
import { USERNAME_MAX_LENGTH } from '../store/limits.ts';

const username = {
  type: 'string',
  description: 'The canonical username (trimmed, lower-cased by default).',
  examples: ['alice'],
};

export const AUTH_SCHEMAS = {
  check: {
    summary: 'Is this session logged in?',
    tags: ['auth'],
    security: cookieAuth,
    response: {
      200: { ...username, description: 'Logged in: the username, as a JSON string.' },
      403: { description: 'Not logged in: the empty JSON string.', type: 'string', enum: [''] },
      503: unavailable,
    },
  },
  login: {
    summary: 'Log in with the username and password of the mail account.',
    description:
      'Checked against the IMAP server. Sets the cookies csrftoken (Max-Age 31449600) and sessionid (HttpOnly, Max-Age 1209600). Also accepts application/x-www-form-urlencoded.',
    tags: ['auth'],
    body: {
      type: 'object',
      properties: {
        username: { type: 'string', minLength: 1, maxLength: USERNAME_MAX_LENGTH, pattern: '\\S' },
        password: { type: 'string', minLength: 1, maxLength: PASSWORD_MAX_LENGTH },
      },
      required: ['username', 'password'],
    },
    response: {
      200: { ...username, description: 'Logged in: the canonical username.' },
      400: {
        description: 'Malformed body, or field errors keyed by field.',
        oneOf: [
          detail(API_ERROR_TEMPLATES.JSON_PARSE.detail('Unexpected end of JSON input')),
          { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
        ],
      },
      403: {
        description: 'Cannot log in (whatever the cause), or a CSRF refusal.',
        ...detail(API_ERRORS.LOGIN_FAILED.detail),
      },
      413: { description: 'Body over 64 KiB.', ...detail(API_ERRORS.BODY_TOO_LARGE.detail) },
      415: {
        description: 'Neither JSON nor a form.',
        ...detail(API_ERROR_TEMPLATES.UNSUPPORTED_MEDIA_TYPE.detail('text/plain')),
      },
      429: {
        description: 'Too many failed logins; Retry-After gives the seconds to wait.',
        ...detail(API_ERROR_TEMPLATES.THROTTLED.detail(900)),
      },
      503: unavailable,
    },
  },
  logout: {
    summary:
      "Log out: the session is deleted server-side and the cookie cleared (not the identity provider's).",
    tags: ['auth'],
    security: cookieAuth,
    response: {
      200: { description: 'Logged out (also when there was no session).', type: 'string', enum: [''] },
      403: { description: 'CSRF refusal.', ...detail(API_ERRORS.CSRF_ORIGIN.detail) },
      503: unavailable,
    },
  },
} as const satisfies Record<string, FastifySchema>;
