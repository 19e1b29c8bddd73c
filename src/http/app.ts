// The wiring of the service: one Fastify instance on a node:http server (node-server.ts) whose raw
// check path answers the hottest request first. A request then meets, in order: the response
// headers and the Host check (headers.ts, allowed-hosts.ts), the route (routes/*.ts, declared with
// endpoints.ts; 404 and errors in errors.ts), its body parser (content-types.ts), the session hook
// (session.ts) and the handler, which calls the domain (auth/login.ts, groups/read.ts) and through it the stores.
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import { LoginProcedure } from '../auth/login.ts';
import { Sessions, sharedSecret } from '../auth/sessions.ts';
import { LoginThrottle } from '../auth/throttle.ts';
import {
  type Authenticator,
  type ImapSettings,
  imapSettings,
  imapTlsOptions,
} from '../backends/imap/authenticator.ts';
import { type ProbeResult, probeImapServer } from '../backends/imap/client.ts';
import { cachedProbe } from '../backends/imap/probe.ts';
import type { Config } from '../config/config.ts';
import { API_ERRORS, ApiError } from '../errors.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import { registerAuthRoutes } from '../routes/auth.ts';
import { registerGroupRoutes } from '../routes/groups.ts';
import { registerOps, registerSchemaRoute } from '../routes/ops.ts';
import { registerSessionRoutes } from '../routes/sessions.ts';
import { OPENAPI_INFO } from '../schemas.ts';
import { type GroupCache, hasGroupCache } from '../store/group-types.ts';
import type { Stores } from '../store/types.ts';
import { logArrival, logCompletion } from './access-log.ts';
import { hasOneHost, hostAllowed, isProbePath } from './allowed-hosts.ts';
import { clientErrorHandler } from './client-errors.ts';
import { BODY_LIMIT_BYTES, installContentTypes } from './content-types.ts';
import { apiEndpoints, supportEveryMethod } from './endpoints.ts';
import { frameworkErrorsHandler, installErrorHandling } from './errors.ts';
import { responseHeaders } from './headers.ts';
import { nodeServerFactory } from './node-server.ts';
import { rawReads } from './raw-reads.ts';
import { requestId } from './request-id.ts';
import { sessionHooks } from './session.ts';
import { registerWebClient } from './web.ts';

export interface AppDeps {
  readonly config: Config;
  readonly stores: Stores;
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  /** Injectable clock (tests move time to expire sessions and throttle windows). */
  readonly now?: () => number;
  /** How a refused login waits out its delay (default a timer; tests record the delay). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The clock a refused login's delay is measured on, in ms (default `performance.now`). */
  readonly loginNow?: () => number;
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

/** The group cache's synchronous answers, when the store keeps one (SQLite). */
function groupReads(stores: Stores): GroupCache | null {
  return hasGroupCache(stores.groups) ? stores.groups : null;
}

/** The cached IMAP probe of /readyz; one TLS context for every probe, as for logins. */
function readinessProbe(imap: ImapSettings): { check(): Promise<ProbeResult> } {
  const tls = imapTlsOptions(imap);
  return cachedProbe(() => probeImapServer(imap, tls), READY_PROBE_TTL_MS);
}

function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

/**
 * The first thing every request meets (contract §1, §7): the standard headers, then the Host checks:
 * more than one Host line is refused on every path (RFC 9112 §3.2), and a Host that ALLOWED_HOSTS does
 * not list everywhere but the health probes. Returns the refusal, or null.
 */
function edgeEntry(allowed: (host: string | undefined) => boolean, trusted: ReadonlySet<string>) {
  return (request: FastifyRequest, reply: FastifyReply): ApiError | null => {
    reply.headers(
      responseHeaders({ url: request.url, requestId: request.id, origin: request.headers.origin }, trusted),
    );
    if (!hasOneHost(request.raw.rawHeaders)) return new ApiError(API_ERRORS.INVALID_HOST);
    if (allowed(request.headers.host) || isProbePath(request.url)) return null;
    return new ApiError(API_ERRORS.INVALID_HOST);
  };
}

/** Builds the service; call `fastify.listen` (or `inject`) on the result. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, stores, authenticator } = deps;
  const now = deps.now ?? Date.now;
  const trusted: ReadonlySet<string> = new Set(config.trustedOrigins);
  const metrics = deps.metrics ?? createMetrics();
  // Handles of sessions (contract §9) are keyed by the same secret as the throttle: one per database.
  const secret = await sharedSecret(config.secretKey, stores);
  const sessions = new Sessions(stores.sessions, now, {
    secret,
    onError: (err) => deps.logger.warn({ err }, 'recording last_seen failed'),
  });
  const lifecycle = { closing: false };
  const allowedHost = hostAllowed(config.allowedHosts);
  const entry = edgeEntry(allowedHost, trusted);
  const fastify = Fastify({
    serverFactory: nodeServerFactory({
      raw: rawReads({
        sessions,
        groups: groupReads(stores),
        trustedOrigins: trusted,
        hostAllowed: allowedHost,
        metrics,
        logger: deps.logger,
        accessLog: config.accessLog,
        atOnce: stores.atOnce ?? ((work) => work()),
        closing: () => lifecycle.closing,
      }),
      logger: deps.logger,
      keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
      requestTimeoutMs: config.http.requestTimeoutMs,
      headersTimeoutMs: config.http.headersTimeoutMs,
    }),
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // A hop count trusts that many proxies nearest to us (Fastify's own reading of a number).
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
    genReqId: requestId,
    // Fastify's two lines per request are replaced by access-log.ts's one, and only with ACCESS_LOG.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    frameworkErrors: frameworkErrorsHandler(entry),
    // contract §3: a group id is digits of any length (leading zeros allowed); the request line, and so
    // any parameter, is already bounded by node's header size limit (16 KiB), so the router adds none.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: Number.MAX_SAFE_INTEGER },
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

  if (deps.logger.isLevelEnabled('debug'))
    fastify.addHook('onRequest', (request, _reply, done) => {
      logArrival(request.log as Logger, request.raw);
      done();
    });
  fastify.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      routeLabel(request.routeOptions.url),
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    if (config.accessLog)
      logCompletion(request.log as Logger, request.raw, reply.statusCode, reply.elapsedTime);
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
  fastify.addHook('onRequest', (request, reply, done) => done(entry(request, reply) ?? undefined));
  installErrorHandling(fastify);
  await installContentTypes(fastify);
  supportEveryMethod(fastify);

  const hooks = sessionHooks(fastify, sessions);
  const throttle = new LoginThrottle(stores.throttle, config.throttle, secret, now);
  const login = new LoginProcedure({
    users: stores.users,
    sessions,
    throttle,
    authenticator,
    allowNewUsers: config.allowNewUsers,
    failureDelayMs: config.authFailureDelayMs,
    sleep: deps.sleep,
    now: deps.loginNow,
  });
  const endpoint = apiEndpoints(fastify, trusted);
  registerAuthRoutes(endpoint, { config, sessions, hooks, login, metrics });
  registerSessionRoutes(endpoint, { config, sessions, hooks });
  registerGroupRoutes(endpoint, { hooks, groups: stores.groups });
  registerSchemaRoute(fastify, endpoint);
  registerWebClient(fastify);
  // contract §8: a chain of backends probes each of them and names the failing one; only an
  // authenticator without its own readiness (a test's) needs the IMAP probe built here.
  const backends = authenticator.readiness?.bind(authenticator) ?? null;
  const imapProbe =
    backends !== null || config.imap.host === null ? null : readinessProbe(imapSettings(config));
  registerOps(fastify, {
    stores,
    imapProbe,
    backends,
    metrics: config.metricsPort === null ? metrics : null,
  });
  fastify.addHook('preClose', (done) => {
    lifecycle.closing = true;
    done();
  });
  // The last sightings are written before whoever closed us closes the stores.
  fastify.addHook('onClose', () => sessions.close());
  metrics.setSources({
    imap: () => authenticator.stats(),
    activeSessions: () => stores.sessions.countActive(now()),
  });
  return { fastify, sessions, throttle, metrics };
}
