// The session of a request (contract §2, §3): one lookup, as a hook that puts the caller's username on
// the request. readSession lets a route answer "nobody" itself (check's 403 ""); requireSession
// refuses nobody with 403 {"detail": "Authentication credentials were not provided."}.
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { readCookies } from '../auth/cookies.ts';
import type { Sessions } from '../auth/sessions.ts';
import { API_ERRORS, ApiError } from './api-errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The username of the request's session: null for nobody, or before a session hook ran. */
    user: string | null;
  }
}

export interface SessionHooks {
  /** Sets request.user to the session's username, or null. */
  readonly readSession: preHandlerAsyncHookHandler;
  /** Sets request.user, or answers 403 when there is no live session. */
  readonly requireSession: preHandlerAsyncHookHandler;
}

/** Decorates the requests with `user` and returns the hooks that set it. */
export function sessionHooks(app: FastifyInstance, sessions: Sessions): SessionHooks {
  app.decorateRequest('user', null);
  // contract §2: a request without a sessionid cookie never touches the store (resolve returns at once).
  const lookup = (request: FastifyRequest) => sessions.resolve(readCookies(request.headers).sessionid);
  return {
    async readSession(request) {
      request.user = await lookup(request);
    },
    async requireSession(request) {
      request.user = await lookup(request);
      if (request.user === null) throw new ApiError(API_ERRORS.NOT_AUTHENTICATED);
    },
  };
}

/** The username requireSession put on the request (a route without that hook has none: a 500). */
export function caller(request: FastifyRequest): string {
  if (request.user === null) throw new Error('requireSession did not run on this route');
  return request.user;
}
