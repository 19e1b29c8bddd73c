// A user's own sessions (contract §9): /api/auth/sessions, /api/auth/sessions/{id} and
// /api/auth/logout-everywhere. Each needs a live session (requireSession); the unsafe ones pass the
// CSRF check first (§7), and §1's Allow, OPTIONS, HEAD and 405 come from the endpoint declaration.

import { readCookies } from '../auth/cookies.ts';
import type { Sessions } from '../auth/sessions.ts';
import { API_ERRORS, ApiError } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import { clearSessionHeaders, csrfGuard, loggedOut } from '../http/route-helpers.ts';
import { caller, type SessionHooks } from '../http/session.ts';
import { SESSION_SCHEMAS } from './sessions-schemas.ts';

export interface SessionRouteDeps {
  readonly cookieSecure: boolean;
  readonly trustedOrigins: readonly string[];
  readonly sessions: Sessions;
  readonly hooks: SessionHooks;
}

/** The three endpoints of contract §9. */
export function registerSessionRoutes(endpoint: DeclareEndpoint, deps: SessionRouteDeps): void {
  const { sessions, cookieSecure } = deps;
  const { requireSession } = deps.hooks;
  const guard = csrfGuard(deps.trustedOrigins);

  endpoint({ url: '/api/auth/sessions', name: 'Session List' }, (routes) =>
    routes.get({ schema: SESSION_SCHEMAS.sessionList, preHandler: requireSession }, async (request, reply) =>
      sendJson(
        reply,
        200,
        JSON.stringify(await sessions.list(caller(request), readCookies(request.headers).sessionid)),
      ),
    ),
  );
  endpoint({ url: '/api/auth/sessions/:id', name: 'Session', beforeBody: guard }, (routes) =>
    routes.delete<{ Params: { id: string } }>(
      { schema: SESSION_SCHEMAS.sessionDelete, preHandler: requireSession },
      async (request, reply) => {
        const current = readCookies(request.headers).sessionid;
        const ended = await sessions.endByHandle(caller(request), request.params.id, current);
        // contract §9: not one of the caller's live sessions, whoever's it may be → 404.
        if (ended === 'not-found') throw new ApiError(API_ERRORS.NOT_FOUND);
        if (ended === 'ended-current') reply.headers(clearSessionHeaders(cookieSecure, request));
        return reply.code(204).send();
      },
    ),
  );
  endpoint({ url: '/api/auth/logout-everywhere', name: 'Logout Everywhere', beforeBody: guard }, (routes) =>
    routes.post(
      { schema: SESSION_SCHEMAS.logoutEverywhere, preHandler: requireSession },
      async (request, reply) => {
        await sessions.endAll(caller(request));
        return loggedOut(cookieSecure, request, reply);
      },
    ),
  );
}
