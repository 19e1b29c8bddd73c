// Wiring: one Fastify instance with the wire rules, the API endpoints and the operational routes.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { Logger } from 'pino';
import type { LoginDeps } from './auth.ts';
import type { Config } from './config.ts';
import { fastCheck } from './fast-check.ts';
import { type Authenticator, type ImapSettings, imapSettings, imapTlsOptions } from './imap.ts';
import { type ProbeResult, probeImapServer } from './imap-client.ts';
import { cachedProbe } from './imap-probe.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { authEndpoints } from './routes/auth.ts';
import { groupEndpoints } from './routes/groups.ts';
import { registerOps } from './routes/ops.ts';
import { OPENAPI_INFO, SCHEMAS } from './schemas.ts';
import { Sessions } from './sessions.ts';
import type { Stores } from './store/types.ts';
import { LoginThrottle } from './throttle.ts';
import { registerWebClient } from './web.ts';
import { clientErrorHandler, frameworkErrorsHandler, installWire, requestId, sendJson } from './wire.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;

export interface AppDeps {
  readonly config: Config;
  readonly stores: Stores;
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  /** Injectable clock (tests move time to expire sessions and throttle windows). */
  readonly now?: () => number;
  /** Shared with the IMAP authenticator's timing; made here when absent. */
  readonly metrics?: Metrics;
}

export interface App {
  readonly fastify: FastifyInstance;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
  readonly metrics: Metrics;
}

/** How long a readiness answer about the IMAP server is reused (contract §6: probes cannot hammer it). */
export const READY_PROBE_TTL_MS = 5000;

/** Paths that go into /api/schema: the API and the health probes, not the web client's files. */
function isPublished(url: string): boolean {
  return url.startsWith('/api/') || url === '/healthz' || url === '/readyz';
}

/** The route as a metric label: the pattern without its regex, or `unmatched` for 404s. */
function routeLabel(url: string | undefined): string {
  return url === undefined ? 'unmatched' : url.replace(/\(\^[^)]*\)/g, '');
}

/** The cached IMAP probe of /readyz; one TLS context for every probe, as for logins. */
function readinessProbe(imap: ImapSettings): { check(): Promise<ProbeResult> } {
  const tls = imapTlsOptions(imap);
  return cachedProbe(() => probeImapServer(imap, tls), READY_PROBE_TTL_MS);
}

function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/** Builds the service; call `fastify.listen` (or `inject`) on the result. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, stores, authenticator } = deps;
  const now = deps.now ?? Date.now;
  // The raw fast path for GET /api/auth/check is wired in once the sessions exist (below).
  let fast: ((request: IncomingMessage, response: ServerResponse) => boolean) | null = null;
  const fastify = Fastify({
    serverFactory: (handler, options) => {
      const server = createServer(options.http ?? {}, (request, response) => {
        let answered = false;
        try {
          answered = fast?.(request, response) === true;
        } catch (err) {
          // Never let the fast path take the process down: the Fastify route answers instead.
          deps.logger.error({ err }, 'fast path failed');
        }
        if (answered) return;
        if (!response.headersSent) handler(request, response);
        else if (!response.writableEnded) response.destroy(); // half-written: the client must not wait
      });
      // What Fastify does for the servers it makes itself.
      server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
      server.requestTimeout = config.http.requestTimeoutMs;
      server.setTimeout(0);
      return server;
    },
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // A hop count trusts that many proxies nearest to us (Fastify's own reading of a number).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    genReqId: requestId,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    frameworkErrors: frameworkErrorsHandler(config.trustedOrigins),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    clientErrorHandler,
    // Deliberate server timeouts (slowloris): headers within HEADERS_TIMEOUT_MS, a whole request
    // within REQUEST_TIMEOUT_MS, idle keep-alive beyond a typical load balancer's 60 s. Node checks
    // them on an interval, set here so a slow client is cut within a second of its deadline.
    http: {
      headersTimeout: config.http.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, config.http.headersTimeoutMs),
    },
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    connectionTimeout: 0,
    return503OnClosing: true,
    // Schemas describe; they must not rewrite a request (null → "" would hide "may not be null").
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false } },
  });

  const metrics = deps.metrics ?? createMetrics();
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      routeLabel(request.routeOptions.url),
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  // Registered before any route, so it sees every route schema; only the API and probes are published.
  await fastify.register(swagger, {
    openapi: OPENAPI_INFO,
    transform: ({ schema, url }) => ({
      schema: isPublished(url) ? schema : ({ ...schema, hide: true } as typeof schema),
      url,
    }),
  });
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
  for (const endpoint of authEndpoints({ config, sessions, login: loginDeps, metrics })) register(endpoint);
  for (const endpoint of groupEndpoints({ sessions, groups: stores.groups })) register(endpoint);
  register({
    path: '/api/schema',
    matches: /^\/api\/schema\/?$/,
    name: 'Schema',
    handlers: { GET: (_request, reply) => sendJson(reply, 200, JSON.stringify(fastify.swagger())) },
    schemas: { GET: SCHEMAS.schema },
  });
  registerWebClient(fastify);

  const imapProbe = config.imap.host === null ? null : readinessProbe(imapSettings(config));
  registerOps(fastify, { stores, imapProbe, metrics: config.metricsPort === null ? metrics : null });
  let closing = false;
  fastify.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  fast = fastCheck({
    sessions,
    trustedOrigins: config.trustedOrigins,
    metrics,
    logger: deps.logger,
    closing: () => closing,
  });
  metrics.setSources({
    imap: () => authenticator.stats(),
    activeSessions: () => stores.sessions.countActive(now()),
  });

  return { fastify, sessions, throttle, metrics };
}
