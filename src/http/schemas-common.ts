// What the schema modules share (contract §1, §3): the {"detail"} body, the 503 and 403 answers,
// the session cookie as the API's security scheme.
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
