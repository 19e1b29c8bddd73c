// Signing in at an identity provider (contract §10): /api/auth/providers, and per provider
// /api/auth/oidc/{name}/start and /callback. GETs, so no CSRF check (§7): the state cookie is the
// defence against login CSRF, and the callback without it is refused. Every answer of the two
// redirecting endpoints is a 302; the cause of a failure goes to the audit line and the metrics only.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clearedFlowCookie, flowCookie, loginCookies, readCookies, readFlowCookie } from '../auth/cookies.ts';
import {
  FLOW_LIFETIME_SECONDS,
  type OidcSignIn,
  type SignInOutcome,
  type StartOutcome,
} from '../auth/oidc-signin.ts';
import { keptUserAgent, newCsrfToken, type Sessions } from '../auth/sessions.ts';
import { API_ERRORS, ApiError } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import { secureCookies, singleHeader } from '../http/route-helpers.ts';
import type { LoginMetrics } from '../metrics/logins.ts';
import { OIDC_SCHEMAS } from './oidc-schemas.ts';

export interface OidcRouteDeps {
  readonly cookieSecure: boolean;
  readonly signIn: OidcSignIn;
  readonly sessions: Sessions;
  readonly metrics: LoginMetrics;
  /** Whether POST /api/auth/login has a password backend to ask (the web client shows the form). */
  readonly passwordLogin: boolean;
  /** contract §12: passkeys are on (said to the web client beside the providers). */
  readonly passkeys: boolean;
}

/** contract §10: where every failure lands; the page says that signing in did not work. */
const FAILED = '/?signin=failed';

type Params = { Params: { name: string }; Querystring: Record<string, unknown> };

/** The query string as received (the callback's code, state and iss): never logged. */
function rawQuery(request: FastifyRequest): string {
  const at = request.url.indexOf('?');
  return at < 0 ? '' : request.url.slice(at + 1);
}

/** The three endpoints of contract §10. */
export function registerOidcRoutes(endpoint: DeclareEndpoint, deps: OidcRouteDeps): void {
  const { signIn, sessions } = deps;
  const providers = JSON.stringify(signIn.list());

  /** contract §6, §8: one audit line per attempt, naming the provider; the metrics likewise. */
  const audit = (
    request: FastifyRequest,
    name: string,
    outcome: StartOutcome | SignInOutcome,
    started: number,
  ) => {
    const failed = outcome.kind === 'failure';
    request.log.info(
      {
        audit: 'login',
        method: 'oidc',
        username: 'username' in outcome ? outcome.username : undefined,
        clientIp: request.ip,
        outcome: failed ? 'failure' : 'success',
        failure: failed ? outcome.failure : undefined,
        reason: failed ? outcome.reason : undefined,
        backend: name,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      },
      'login attempt',
    );
    deps.metrics.observeLogin(failed ? 'failure' : 'success', failed ? outcome.failure : undefined, name);
  };

  const redirect = (reply: FastifyReply, location: string, cookies: string[]) =>
    reply.code(302).header('location', location).header('set-cookie', cookies).send();

  const start = async (request: FastifyRequest<Params>, reply: FastifyReply) => {
    const started = performance.now();
    const { name } = request.params;
    if (!signIn.has(name)) throw new ApiError(API_ERRORS.NOT_FOUND);
    const next = request.query['next'];
    const outcome = await signIn.start(name, typeof next === 'string' ? next : undefined);
    const secure = secureCookies(deps.cookieSecure, request);
    if (outcome.kind === 'failure') {
      audit(request, name, outcome, started);
      return redirect(reply, FAILED, [clearedFlowCookie(secure)]);
    }
    return redirect(reply, outcome.url, [
      flowCookie(outcome.handle, FLOW_LIFETIME_SECONDS, sessions.now(), secure),
    ]);
  };

  const callback = async (request: FastifyRequest<Params>, reply: FastifyReply) => {
    const started = performance.now();
    const { name } = request.params;
    if (!signIn.has(name)) throw new ApiError(API_ERRORS.NOT_FOUND);
    const outcome = await signIn.finish(
      name,
      readFlowCookie(request.headers),
      rawQuery(request),
      // contract §9: kept with the session, as after a password login.
      { ip: request.ip, userAgent: keptUserAgent(singleHeader(request.headers['user-agent'])) },
      readCookies(request.headers).sessionid,
    );
    audit(request, name, outcome, started);
    const secure = secureCookies(deps.cookieSecure, request);
    // contract §10: the state cookie is cleared whatever the outcome; the flow it named is gone.
    if (outcome.kind === 'failure') return redirect(reply, FAILED, [clearedFlowCookie(secure)]);
    const cookies = loginCookies(outcome.sessionId, newCsrfToken(), sessions.now(), secure);
    return redirect(reply, outcome.next, [clearedFlowCookie(secure), ...cookies]);
  };

  endpoint({ url: '/api/auth/providers', name: 'Providers' }, (routes) =>
    routes.get({ schema: OIDC_SCHEMAS.providers }, (_request, reply) =>
      sendJson(
        reply
          .header('x-password-login', String(deps.passwordLogin))
          // contract §12: whether the web client shows passkeys (their endpoints answer 404 when off).
          .header('x-passkeys', String(deps.passkeys)),
        200,
        providers,
      ),
    ),
  );
  endpoint({ url: '/api/auth/oidc/:name/start', name: 'Provider Sign-in' }, (routes) =>
    routes.get<Params>({ schema: OIDC_SCHEMAS.oidcStart }, start),
  );
  endpoint({ url: '/api/auth/oidc/:name/callback', name: 'Provider Callback' }, (routes) =>
    routes.get<Params>({ schema: OIDC_SCHEMAS.oidcCallback }, callback),
  );
}
