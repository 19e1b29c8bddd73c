// /api/auth/check, /api/auth/login, /api/auth/logout (contract §2, §3, §7).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { loginCookies, readCookies } from '../auth/cookies.ts';
import { parseCredentials } from '../auth/credentials.ts';
import type { LoginProcedure } from '../auth/login.ts';
import { ASK_THE_STORE, keptUserAgent, newCsrfToken, type Sessions } from '../auth/sessions.ts';
import type { UsernameCase } from '../auth/username.ts';
import { API_ERRORS, ApiError, FieldErrors, throttled } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import type { RawAnswer } from '../http/raw-reads.ts';
import { csrfGuard, LOGGED_OUT, loggedOut, secureCookies, singleHeader } from '../http/route-helpers.ts';
import type { SessionHooks } from '../http/session.ts';
import type { LoginMetrics } from '../metrics/logins.ts';
import { AUTH_SCHEMAS } from './auth-schemas.ts';

export interface AuthRouteDeps {
  readonly cookieSecure: boolean;
  readonly trustedOrigins: readonly string[];
  readonly usernameCase: UsernameCase;
  readonly sessions: Sessions;
  readonly hooks: SessionHooks;
  readonly login: LoginProcedure;
  readonly metrics: LoginMetrics;
}

/** contract §3: check's answer for the session's user, or nobody (403 ""). */
const NOBODY: RawAnswer = Object.freeze({ status: 403, body: LOGGED_OUT, ascii: true });

function checkAnswer(username: string | null): RawAnswer {
  return username === null ? NOBODY : { status: 200, body: JSON.stringify(username), ascii: false };
}

/** The three auth endpoints (check answered from memory on the raw read path when it can). */
export function registerAuthRoutes(endpoint: DeclareEndpoint, deps: AuthRouteDeps): void {
  const { sessions } = deps;
  const guard = csrfGuard(deps.trustedOrigins);

  // contract §3: check answers nobody with 403 "" rather than the {"detail"} of requireSession.
  const check = async (request: FastifyRequest, reply: FastifyReply) => {
    const { status, body } = checkAnswer(request.user);
    return sendJson(reply, status, body);
  };

  const doLogin = async (request: FastifyRequest, reply: FastifyReply) => {
    const started = performance.now();
    const form = (request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    const parsed = parseCredentials(request.body, deps.usernameCase, form);
    if (parsed.kind === 'not_a_dictionary') throw new ApiError(API_ERRORS.NOT_A_DICTIONARY);
    if (parsed.kind === 'invalid') throw new FieldErrors(parsed.fields);
    const { username } = parsed.credentials;
    const outcome = await deps.login.attempt(
      parsed.credentials,
      // contract §9: kept with the session; the address as the audit line has it (TRUST_PROXY).
      { ip: request.ip, userAgent: keptUserAgent(singleHeader(request.headers['user-agent'])) },
      readCookies(request.headers).sessionid,
    );
    const audit = {
      audit: 'login',
      username,
      clientIp: request.ip,
      outcome: outcome.kind,
      failure: outcome.kind === 'failure' ? outcome.failure : undefined,
      reason: outcome.kind === 'failure' ? outcome.reason : undefined,
      // contract §8: the backend that decided.
      backend: outcome.kind === 'throttled' ? undefined : outcome.backend,
      durationMs: Math.round((performance.now() - started) * 10) / 10,
    };
    request.log.info(audit, 'login attempt');
    deps.metrics.observeLogin(
      outcome.kind,
      outcome.kind === 'failure' ? outcome.failure : undefined,
      outcome.kind === 'throttled' ? undefined : outcome.backend,
    );
    if (outcome.kind === 'throttled') throw throttled(outcome.retryAfterSeconds);
    if (outcome.kind === 'failure') throw new ApiError(API_ERRORS.LOGIN_FAILED);
    const cookies = loginCookies(
      outcome.sessionId,
      newCsrfToken(),
      sessions.now(),
      secureCookies(deps.cookieSecure, request),
    );
    reply.header('set-cookie', cookies);
    return sendJson(reply, 200, JSON.stringify(outcome.username));
  };

  const logout = async (request: FastifyRequest, reply: FastifyReply) => {
    await sessions.end(readCookies(request.headers).sessionid);
    return loggedOut(deps.cookieSecure, request, reply);
  };

  // contract §2: no cookie answers nobody without the store; a session kept in memory, from memory.
  const checkFromMemory = ({ sessionid }: { sessionid: string | undefined }) => {
    const username = sessions.fromMemory(sessionid);
    return username === ASK_THE_STORE ? undefined : checkAnswer(username);
  };
  // The check reads the sessions alone: it waits for no catch-up of the groups.
  endpoint(
    { url: '/api/auth/check', name: 'Check', rawRead: checkFromMemory, rawReadMemories: ['sessions'] },
    (routes) => routes.get({ schema: AUTH_SCHEMAS.check, preHandler: deps.hooks.readSession }, check),
  );
  endpoint({ url: '/api/auth/login', name: 'Login', beforeBody: guard }, (routes) =>
    routes.post({ schema: AUTH_SCHEMAS.login }, doLogin),
  );
  endpoint({ url: '/api/auth/logout', name: 'Logout', beforeBody: guard }, (routes) =>
    routes.post({ schema: AUTH_SCHEMAS.logout }, logout),
  );
}
