// JSON schemas of the API (contract §3). Fastify uses them on the routes (response serialization,
// request description) and @fastify/swagger turns the same objects into /api/schema (OpenAPI 3.1).
import type { FastifySchema } from 'fastify';
import { PASSWORD_MAX_LENGTH } from '../auth/credentials.ts';
import { GROUP_LIMITS, MAX_GROUP_ID, USERNAME_MAX_LENGTH } from '../store/limits.ts';
import { API_ERROR_TEMPLATES, API_ERRORS } from './api-errors.ts';

const detail = (example: string) => ({
  type: 'object',
  properties: { detail: { type: 'string', examples: [example] } },
  required: ['detail'],
});

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

const nullable = (description: string, example: string) => ({
  type: ['string', 'null'],
  description,
  examples: [example],
});

// contract §9: one session as the caller sees it; ip and user_agent are null for sessions started
// before they were recorded.
const sessionView = {
  type: 'object',
  properties: {
    id: {
      type: 'string',
      minLength: 16,
      description: 'Opaque handle; the session id cannot be derived from it.',
    },
    created: { type: 'string', format: 'date-time', examples: ['2026-11-22T10:00:00Z'] },
    last_seen: {
      type: 'string',
      format: 'date-time',
      description: 'Accurate to 10 minutes.',
      examples: ['2026-11-22T11:40:00Z'],
    },
    ip: nullable("The login request's client address.", '192.0.2.10'),
    user_agent: nullable("The login request's User-Agent, cut at 256 characters.", 'Mozilla/5.0 …'),
    current: { type: 'boolean', description: 'The session of this request.' },
  },
  required: ['id', 'created', 'last_seen', 'ip', 'user_agent', 'current'],
  additionalProperties: false,
} as const;

const unavailable = {
  description: 'A store cannot be reached (Retry-After says when to try again).',
  ...detail(API_ERRORS.UNAVAILABLE.detail),
};
const notAuthenticated = {
  description: 'No valid session.',
  ...detail(API_ERRORS.NOT_AUTHENTICATED.detail),
};
const cookieAuth = [{ sessionCookie: [] }];

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

export const SCHEMAS = {
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
  sessionList: {
    summary: "The caller's live sessions, newest first (contract §9).",
    tags: ['sessions'],
    security: cookieAuth,
    response: {
      200: { description: 'The sessions.', type: 'array', items: sessionView },
      403: notAuthenticated,
      503: unavailable,
    },
  },
  sessionDelete: {
    summary: "End one of the caller's sessions (the current one also clears the cookie, as logout).",
    tags: ['sessions'],
    security: cookieAuth,
    params: {
      type: 'object',
      properties: { id: { type: 'string', description: "The session's id from the list (opaque)." } },
      required: ['id'],
    },
    response: {
      204: { description: 'Ended; no body.', type: 'null' },
      403: {
        description: 'No valid session, or a CSRF refusal.',
        ...detail(API_ERRORS.NOT_AUTHENTICATED.detail),
      },
      404: {
        description: "Not one of the caller's live sessions.",
        ...detail(API_ERRORS.NOT_FOUND.detail),
      },
      503: unavailable,
    },
  },
  logoutEverywhere: {
    summary: 'End every session of the caller, this one included; answered like logout.',
    tags: ['sessions'],
    security: cookieAuth,
    response: {
      200: { description: 'Logged out everywhere.', type: 'string', enum: [''] },
      403: {
        description: 'No valid session, or a CSRF refusal.',
        ...detail(API_ERRORS.NOT_AUTHENTICATED.detail),
      },
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
  providers: {
    summary: 'The identity providers people can sign in at (contract §10); [] when none is configured.',
    tags: ['auth'],
    response: {
      200: {
        description:
          'One button each. X-Password-Login says whether POST /api/auth/login has a password backend to ask.',
        headers: {
          'x-password-login': { schema: { type: 'string', enum: ['true', 'false'] } },
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
  schema: { hide: true },
  options: { hide: true },
  // The route of every method an endpoint refuses (405): not part of the API's description.
  methodNotAllowed: { hide: true },
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
