// Wiring: one Fastify instance with the wire rules, the API endpoints and the operational routes.
import formbody from '@fastify/formbody';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { LoginDeps } from './auth.ts';
import type { Config } from './config.ts';
import type { Authenticator } from './imap.ts';
import { authEndpoints } from './routes/auth.ts';
import { groupEndpoints } from './routes/groups.ts';
import { Sessions } from './sessions.ts';
import type { Stores } from './store/types.ts';
import { LoginThrottle } from './throttle.ts';
import { registerWebClient } from './web.ts';
import { clientErrorHandler, frameworkErrorsHandler, installWire, requestId } from './wire.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;

export interface AppDeps {
  readonly config: Config;
  readonly stores: Stores;
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  /** Injectable clock (tests move time to expire sessions and throttle windows). */
  readonly now?: () => number;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
}

function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/** Builds the service; call `fastify.listen` (or `inject`) on the result. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, stores, authenticator } = deps;
  const now = deps.now ?? Date.now;
  const fastify = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // A hop count trusts that many proxies nearest to us (Fastify's own reading of a number).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    genReqId: requestId,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    frameworkErrors: frameworkErrorsHandler(config.trustedOrigins),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    clientErrorHandler,
    // Deliberate server timeouts (slowloris): headers within 10 s, a whole request within 30 s.
    requestTimeout: 30_000,
    keepAliveTimeout: 72_000,
    connectionTimeout: 0,
    return503OnClosing: true,
  });
  fastify.server.headersTimeout = 10_000;

  const register = installWire(fastify, { trustedOrigins: config.trustedOrigins });
  await fastify.register(formbody, { bodyLimit: BODY_LIMIT_BYTES });

  const sessions = new Sessions(stores.sessions, now);
  const secret = config.secretKey === null ? await stores.secretKey() : Buffer.from(config.secretKey);
  const throttle = new LoginThrottle(stores.throttle, config.throttle, secret, now);
  const loginDeps: LoginDeps = {
    users: stores.users,
    sessions,
    throttle,
    authenticator,
    allowNewUsers: config.allowNewUsers,
  };
  for (const endpoint of authEndpoints({ config, sessions, login: loginDeps })) register(endpoint);
  for (const endpoint of groupEndpoints({ sessions, groups: stores.groups })) register(endpoint);
  registerWebClient(fastify);

  fastify.get('/healthz', (_request, reply) => reply.type('application/json').send('{"status":"ok"}'));

  return { fastify, sessions, throttle };
}
