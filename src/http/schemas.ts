// JSON schemas of the API (contract §3). Fastify uses them on the routes (response serialization,
// request description) and @fastify/swagger turns the same objects into /api/schema (OpenAPI 3.1).
import type { FastifySchema } from 'fastify';
import { PASSWORD_MAX_LENGTH } from '../auth/credentials.ts';
import { GROUP_LIMITS, MAX_GROUP_ID, USERNAME_MAX_LENGTH } from '../store/limits.ts';
import { API_ERROR_TEMPLATES, API_ERRORS } from './api-errors.ts';
import { cookieAuth, detail, notAuthenticated, unavailable } from './schemas-common.ts';
import { OIDC_SCHEMAS } from './schemas-oidc.ts';
import { SESSION_SCHEMAS } from './schemas-sessions.ts';

const username = {
  type: 'string',
  description: 'The canonical username (trimmed, lower-cased by default).',
  examples: ['alice'],
};

const group = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1, maximum: MAX_GROUP_ID },
    name: { type: 'string', minLength: 1, maxLength: GROUP_LIMITS.name },
    description: { type: 'string', maxLength: GROUP_LIMITS.description },
    short_description: {
      type: 'string',
      maxLength: GROUP_LIMITS.short_description,
      description: 'Requirement to join the group.',
    },
    activities: { type: 'string', maxLength: GROUP_LIMITS.activities },
    type: { type: 'integer', enum: [0, 1], description: '0 = normal group, 1 = classroom.' },
  },
  required: ['id', 'name', 'description', 'short_description', 'activities', 'type'],
  additionalProperties: false,
} as const;

const groupDetail = {
  ...group,
  properties: {
    ...group.properties,
    member_status: {
      type: 'integer',
      enum: [-1, 0, 1, 2],
      description: "The caller's membership: -1 not a member, 0 request pending, 1 member, 2 administrator.",
    },
  },
  required: [...group.required, 'member_status'],
};

export const SCHEMAS = {
  ...SESSION_SCHEMAS,
  ...OIDC_SCHEMAS,
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
  groupList: {
    summary: "The caller's groups: those where they are a member or an administrator, by id.",
    tags: ['groups'],
    security: cookieAuth,
    response: {
      200: { description: 'The groups.', type: 'array', items: group },
      403: notAuthenticated,
      503: unavailable,
    },
  },
  groupDetail: {
    summary: "One group, with the caller's membership status.",
    tags: ['groups'],
    security: cookieAuth,
    params: {
      type: 'object',
      properties: {
        id: { type: 'string', pattern: '^[0-9]+$', description: 'Group id; leading zeros allowed.' },
      },
      required: ['id'],
    },
    response: {
      200: { description: 'The group.', ...groupDetail },
      403: notAuthenticated,
      404: {
        description: 'No such group, or an id that is not one.',
        ...detail(API_ERRORS.NOT_FOUND.detail),
      },
      503: unavailable,
    },
  },
} as const satisfies Record<string, FastifySchema & { hide?: boolean }>;

/** The OpenAPI document's frame: @fastify/swagger fills in the paths from the route schemas. */
export const OPENAPI_INFO = {
  openapi: '3.1.0',
  info: {
    title: 'clubhouse',
    version: '1',
    description: 'Sign in with the password of your mail account and see the groups you belong to.',
  },
  components: {
    securitySchemes: { sessionCookie: { type: 'apiKey', in: 'cookie', name: 'sessionid' } },
  },
} as const;
