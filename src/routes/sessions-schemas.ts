// JSON schemas of a user's own sessions (contract §9): the list, ending one, ending all.
import type { FastifySchema } from 'fastify';
import { API_ERRORS } from '../http/api-errors.ts';
import { cookieAuth, detail, notAuthenticated, unavailable } from '../http/openapi.ts';

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
    method: {
      type: ['string', 'null'],
      enum: ['password', 'oidc', 'passkey', null],
      description: 'How it signed in (contract §12); null for sessions started before this was recorded.',
    },
    current: { type: 'boolean', description: 'The session of this request.' },
  },
  required: ['id', 'created', 'last_seen', 'ip', 'user_agent', 'method', 'current'],
  additionalProperties: false,
} as const;

export const SESSION_SCHEMAS = {
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
} as const satisfies Record<string, FastifySchema>;
