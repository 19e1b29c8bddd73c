// The OpenAPI document of the API (contract §3: GET /api/schema): its frame, which @fastify/swagger
// fills in from the route schemas, and the parts every endpoint family's schemas share (the
// {"detail"} body, the 503 and 403 answers, the session cookie as the security scheme). Each
// family's own schemas are beside its route module (routes/*-schemas.ts).
import { API_ERRORS } from './api-errors.ts';

export const detail = (example: string) => ({
  type: 'object',
  properties: { detail: { type: 'string', examples: [example] } },
  required: ['detail'],
});

export const unavailable = {
  description: 'A store cannot be reached (Retry-After says when to try again).',
  ...detail(API_ERRORS.UNAVAILABLE.detail),
};
export const notAuthenticated = {
  description: 'No valid session.',
  ...detail(API_ERRORS.NOT_AUTHENTICATED.detail),
};
export const cookieAuth = [{ sessionCookie: [] }];

/** A route left out of the document (the OPTIONS and 405 routes of every endpoint, /api/schema). */
export const HIDDEN = { hide: true } as const;

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
