// /api/auth/check, /api/auth/login, /api/auth/logout (contract §2, §3, §7).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clearedSessionCookie, loginCookies, readCookies } from '../auth/cookies.ts';
import { parseCredentials } from '../auth/credentials.ts';
import { checkCsrf } from '../auth/csrf.ts';
import type { LoginProcedure } from '../auth/login.ts';
import { keptUserAgent, newCsrfToken, type Sessions } from '../auth/sessions.ts';
import type { Config } from '../config/config.ts';
import { API_ERRORS, ApiError, FieldErrors, throttled } from '../errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import type { SessionHooks } from '../http/session.ts';
import type { Metrics } from '../metrics.ts';
import { SCHEMAS } from '../schemas.ts';

export interface AuthRouteDeps {
  readonly config: Pick<Config, 'cookieSecure' | 'trustedOrigins' | 'usernameCase'>;
  readonly sessions: Sessions;
  readonly hooks: SessionHooks;
  readonly login: LoginProcedure;
  readonly metrics: Metrics;
}

const LOGGED_OUT = '""';

/** Throws the contract's 403 when an unsafe request fails the cross-origin or token check. */
export function csrfGuard(trustedOrigins: readonly string[]): (request: FastifyRequest) => void {
  return (request) => {
    const header = request.headers['x-csrftoken'];
    const verdict = checkCsrf(
      {
        origin: request.headers.origin,
        secFetchSite: singleHeader(request.headers['sec-fetch-site']),
        host: request.headers.host,
        headerToken: singleHeader(header),
        cookieToken: readCookies(request.headers).csrftoken,
      },
      trustedOrigins,
    );
    if (verdict === 'origin') throw new ApiError(API_ERRORS.CSRF_ORIGIN);
    if (verdict === 'token') throw new ApiError(API_ERRORS.CSRF_TOKEN);
  };
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/** Whether cookies set in answer to `request` are Secure. */
export function secureCookies(config: Pick<Config, 'cookieSecure'>, request: FastifyRequest): boolean {
  // contract §2: Secure when configured, or when a trusted proxy says the client used TLS.
  return config.cookieSecure || request.protocol === 'https';
}

/** Answers as logout does (contract §2): 200 "", the session cookie cleared, Clear-Site-Data. */
export function loggedOut(
  config: Pick<Config, 'cookieSecure'>,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  reply.headers({
    'set-cookie': clearedSessionCookie(secureCookies(config, request)),
    'clear-site-data': '"cookies"',
  });
  return sendJson(reply, 200, LOGGED_OUT);
}

/** The three auth endpoints (the raw read path, http/raw-reads.ts, answers check when it can). */
export function registerAuthRoutes(endpoint: DeclareEndpoint, deps: AuthRouteDeps): void {
  const { config, sessions } = deps;
  const guard = csrfGuard(config.trustedOrigins);

  // contract §3: check answers nobody with 403 "" rather than the {"detail"} of requireSession.
  const check = async (request: FastifyRequest, reply: FastifyReply) =>
    request.user === null
      ? sendJson(reply, 403, LOGGED_OUT)
      : sendJson(reply, 200, JSON.stringify(request.user));

  const doLogin = async (request: FastifyRequest, reply: FastifyReply) => {
    const started = performance.now();
    const form = (request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    const parsed = parseCredentials(request.body, config.usernameCase, form);
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
      secureCookies(config, request),
    );
    reply.header('set-cookie', cookies);
    return sendJson(reply, 200, JSON.stringify(outcome.username));
  };

  const logout = async (request: FastifyRequest, reply: FastifyReply) => {
    await sessions.end(readCookies(request.headers).sessionid);
    return loggedOut(config, request, reply);
  };

  endpoint({ url: '/api/auth/check', name: 'Check' }, (routes) =>
    routes.get({ schema: SCHEMAS.check, preHandler: deps.hooks.readSession }, check),
  );
  endpoint({ url: '/api/auth/login', name: 'Login', beforeBody: guard }, (routes) =>
    routes.post({ schema: SCHEMAS.login }, doLogin),
  );
  endpoint({ url: '/api/auth/logout', name: 'Logout', beforeBody: guard }, (routes) =>
    routes.post({ schema: SCHEMAS.logout }, logout),
  );
}
