// The passkey endpoints (contract §12): the registration and sign-in ceremonies, a user's passkeys
// and the password switch. Declared only when passkeys are on (PASSKEYS): otherwise each answers 404
// as any unknown path. Every unsafe method passes the CSRF check first (§7); §1's Allow, OPTIONS,
// HEAD and 405 come from the endpoint declaration. One audit line per sign-in attempt (as login's)
// and per change; none of them holds a credential id, a challenge or anything the passkey signed.
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  clearedPasskeyCookie,
  loginCookies,
  passkeyCookie,
  readCookies,
  readPasskeyCookie,
} from '../auth/cookies.ts';
import { CHALLENGE_LIFETIME_SECONDS, type Passkeys, passkeyName } from '../auth/passkeys.ts';
import { keptUserAgent, newCsrfToken, type Sessions } from '../auth/sessions.ts';
import { API_ERRORS, ApiError, throttled } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import { clearSessionHeaders, csrfGuard, secureCookies, singleHeader } from '../http/route-helpers.ts';
import { caller, type SessionHooks } from '../http/session.ts';
import type { LoginMetrics } from '../metrics/logins.ts';
import type { PasskeyMetrics } from '../metrics/passkeys.ts';
import { PASSKEY_SCHEMAS } from './passkeys-schemas.ts';

export interface PasskeyRouteDeps {
  readonly cookieSecure: boolean;
  readonly trustedOrigins: readonly string[];
  readonly passkeys: Passkeys;
  readonly sessions: Sessions;
  readonly hooks: SessionHooks;
  readonly metrics: LoginMetrics & PasskeyMetrics;
}

type IdParams = { Params: { id: string } };

/** The endpoints of contract §12. */
export function registerPasskeyRoutes(endpoint: DeclareEndpoint, deps: PasskeyRouteDeps): void {
  const { passkeys, sessions, cookieSecure, metrics } = deps;
  const { requireSession } = deps.hooks;
  const guard = csrfGuard(deps.trustedOrigins);
  const sessionOf = (request: FastifyRequest) => readCookies(request.headers).sessionid;

  /** The body's shape (the schema's, attached rather than answered: endpoints.ts), or a 400. */
  const wellFormed = (request: FastifyRequest) => {
    if (request.validationError !== undefined) throw new ApiError(API_ERRORS.BAD_REQUEST);
  };

  /** One audit line per change of a user's passkeys or switch (never a credential id). */
  const audit = (request: FastifyRequest, action: string, outcome: string, fields: object = {}) =>
    request.log.info(
      { audit: 'passkey', action, username: caller(request), clientIp: request.ip, outcome, ...fields },
      'passkey change',
    );

  /** contract §12: creating or deleting a passkey and the switch need a sign-in within 10 minutes. */
  const requireRecentSignIn = async (request: FastifyRequest, action: string) => {
    if (await passkeys.recentlySignedIn(caller(request), sessionOf(request))) return;
    audit(request, action, 'refused', { reason: 'signed in more than 10 minutes ago' });
    throw new ApiError(API_ERRORS.SIGN_IN_AGAIN);
  };

  const registrationOptions = async (request: FastifyRequest, reply: FastifyReply) => {
    // requireSession ran: the cookie names a live session.
    const options = await passkeys.registrationOptions(caller(request), sessionOf(request) as string);
    return sendJson(reply, 200, JSON.stringify(options));
  };

  const create = async (
    request: FastifyRequest<{ Body: { credential: RegistrationResponseJSON; name?: unknown } }>,
    reply: FastifyReply,
  ) => {
    wellFormed(request);
    await requireRecentSignIn(request, 'create');
    const name = passkeyName(request.body.name);
    if (name === null) throw new ApiError(API_ERRORS.PASSKEY_NAME);
    const username = caller(request);
    const registered = await passkeys.register(
      username,
      sessionOf(request) as string,
      request.body.credential,
      name,
    );
    metrics.observeRegistration(registered.kind === 'created' ? 'created' : registered.refusal);
    if (registered.kind === 'refused') {
      audit(request, 'create', 'refused', { failure: registered.refusal, reason: registered.reason });
      if (registered.refusal === 'bad_state') throw new ApiError(API_ERRORS.PASSKEY_EXPIRED);
      if (registered.refusal === 'taken') throw new ApiError(API_ERRORS.PASSKEY_TAKEN);
      throw new ApiError(API_ERRORS.PASSKEY_NOT_VERIFIED);
    }
    audit(request, 'create', 'success', { passkey: registered.passkey.id });
    return sendJson(reply, 201, JSON.stringify(registered.passkey));
  };

  const list = async (request: FastifyRequest, reply: FastifyReply) =>
    sendJson(reply, 200, JSON.stringify(await passkeys.list(caller(request))));

  const rename = async (
    request: FastifyRequest<IdParams & { Body: { name: unknown } }>,
    reply: FastifyReply,
  ) => {
    wellFormed(request);
    const name = passkeyName(request.body.name);
    if (name === null) throw new ApiError(API_ERRORS.PASSKEY_NAME);
    const username = caller(request);
    const { id } = request.params;
    // contract §9's rule: another user's id is as unknown as a made-up one.
    if (!(await passkeys.rename(username, id, name))) throw new ApiError(API_ERRORS.NOT_FOUND);
    audit(request, 'rename', 'success', { passkey: id });
    const renamed = (await passkeys.list(username)).find((p) => p.id === id);
    if (renamed === undefined) throw new ApiError(API_ERRORS.NOT_FOUND);
    return sendJson(reply, 200, JSON.stringify(renamed));
  };

  const remove = async (request: FastifyRequest<IdParams>, reply: FastifyReply) => {
    await requireRecentSignIn(request, 'delete');
    const { id } = request.params;
    const removed = await passkeys.remove(caller(request), id, sessionOf(request));
    if (removed === 'not-found') throw new ApiError(API_ERRORS.NOT_FOUND);
    audit(request, 'delete', 'success', { passkey: id });
    // The caller's own session signed in with it: it ended too, so its cookie goes.
    if (removed === 'deleted-current') reply.headers(clearSessionHeaders(cookieSecure, request));
    return reply.code(204).send();
  };

  const settings = async (request: FastifyRequest, reply: FastifyReply) =>
    sendJson(reply, 200, JSON.stringify(await passkeys.settings(caller(request))));

  const changeSettings = async (
    request: FastifyRequest<{ Body: { password_sign_in: boolean } }>,
    reply: FastifyReply,
  ) => {
    wellFormed(request);
    await requireRecentSignIn(request, 'password_sign_in');
    const on = request.body.password_sign_in;
    const changed = await passkeys.setPasswordSignIn(caller(request), on);
    audit(request, 'password_sign_in', changed.kind === 'ok' ? 'success' : 'refused', {
      passwordSignIn: on,
      ...(changed.kind === 'ok' ? {} : { reason: changed.kind }),
    });
    if (changed.kind === 'policy') throw new ApiError(API_ERRORS.PASSWORD_POLICY);
    if (changed.kind !== 'ok') throw new ApiError(API_ERRORS.NO_PASSKEY);
    return sendJson(reply, 200, JSON.stringify(changed.settings));
  };

  const authenticationOptions = async (request: FastifyRequest, reply: FastifyReply) => {
    const { options, handle } = await passkeys.authenticationOptions();
    const secure = secureCookies(cookieSecure, request);
    reply.header('set-cookie', passkeyCookie(handle, CHALLENGE_LIFETIME_SECONDS, sessions.now(), secure));
    return sendJson(reply, 200, JSON.stringify(options));
  };

  const login = async (
    request: FastifyRequest<{ Body: { credential: AuthenticationResponseJSON } }>,
    reply: FastifyReply,
  ) => {
    wellFormed(request);
    const started = performance.now();
    const outcome = await passkeys.signIn(
      readPasskeyCookie(request.headers),
      request.body.credential,
      // contract §9: kept with the session; the address as the audit line has it (TRUST_PROXY).
      { ip: request.ip, userAgent: keptUserAgent(singleHeader(request.headers['user-agent'])) },
      sessionOf(request),
    );
    const failed = outcome.kind === 'failure' ? outcome : undefined;
    request.log.info(
      {
        audit: 'login',
        method: 'passkey',
        username: outcome.kind === 'throttled' ? undefined : outcome.username,
        clientIp: request.ip,
        outcome: outcome.kind,
        failure: failed?.failure,
        reason: failed?.reason,
        backend: 'passkey',
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      },
      'login attempt',
    );
    metrics.observeLogin(outcome.kind, failed?.failure, outcome.kind === 'throttled' ? undefined : 'passkey');
    if (outcome.kind === 'throttled') throw throttled(outcome.retryAfterSeconds);
    const secure = secureCookies(cookieSecure, request);
    // The challenge is used whatever the outcome: its cookie goes.
    reply.header('set-cookie', clearedPasskeyCookie(secure));
    if (outcome.kind === 'failure') throw new ApiError(API_ERRORS.LOGIN_FAILED);
    reply.header('set-cookie', [
      clearedPasskeyCookie(secure),
      ...loginCookies(outcome.sessionId, newCsrfToken(), sessions.now(), secure),
    ]);
    return sendJson(reply, 200, JSON.stringify(outcome.username));
  };

  endpoint({ url: '/api/auth/passkeys', name: 'Passkey List', beforeBody: guard }, (routes) => {
    routes.get({ schema: PASSKEY_SCHEMAS.list, preHandler: requireSession }, list);
    routes.post({ schema: PASSKEY_SCHEMAS.create, preHandler: requireSession }, create);
  });
  endpoint(
    { url: '/api/auth/passkeys/registration', name: 'Passkey Registration', beforeBody: guard },
    (routes) =>
      routes.post({ schema: PASSKEY_SCHEMAS.registration, preHandler: requireSession }, registrationOptions),
  );
  endpoint({ url: '/api/auth/passkeys/settings', name: 'Passkey Settings', beforeBody: guard }, (routes) => {
    routes.get({ schema: PASSKEY_SCHEMAS.settings, preHandler: requireSession }, settings);
    routes.put({ schema: PASSKEY_SCHEMAS.changeSettings, preHandler: requireSession }, changeSettings);
  });
  endpoint(
    { url: '/api/auth/passkeys/authentication', name: 'Passkey Authentication', beforeBody: guard },
    (routes) => routes.post({ schema: PASSKEY_SCHEMAS.authentication }, authenticationOptions),
  );
  endpoint({ url: '/api/auth/passkeys/login', name: 'Passkey Login', beforeBody: guard }, (routes) =>
    routes.post({ schema: PASSKEY_SCHEMAS.login }, login),
  );
  endpoint({ url: '/api/auth/passkeys/:id', name: 'Passkey', beforeBody: guard }, (routes) => {
    routes.patch({ schema: PASSKEY_SCHEMAS.rename, preHandler: requireSession }, rename);
    routes.delete({ schema: PASSKEY_SCHEMAS.remove, preHandler: requireSession }, remove);
  });
}
