// The HTTP edge: one Fastify instance on a node:http server (node-server.ts) whose raw read path
// answers the hottest requests first (raw-reads.ts). A request meets, in order: the response headers
// and the Host checks (headers.ts, allowed-hosts.ts), the route (declared with endpoints.ts; 404 and
// errors in errors.ts), its body parser (content-types.ts), the session hook (session.ts) and the
// handler. HTTP mechanics only: which routes exist is the composition root's (src/app.ts).
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { RequestMetrics } from '../metrics/requests.ts';
import { logArrival, logCompletion } from './access-log.ts';
import { hasOneHost, hostAllowed, isProbePath, requestHost, targetPath } from './allowed-hosts.ts';
import { API_ERRORS, ApiError } from './api-errors.ts';
import { clientErrorHandler } from './client-errors.ts';
import { BODY_LIMIT_BYTES, installContentTypes } from './content-types.ts';
import { apiEndpoints, type DeclareEndpoint, routeLabel, supportEveryMethod } from './endpoints.ts';
import { frameworkErrorsHandler, installErrorHandling } from './errors.ts';
import { responseHeaders } from './headers.ts';
import { nodeServerFactory } from './node-server.ts';
import { OPENAPI_INFO } from './openapi.ts';
import { type RawReadDeps, RawRoutes, rawReads } from './raw-reads.ts';
import { requestId } from './request-id.ts';

/** `true`, a hop count, or the proxy addresses/CIDRs whose forwarded headers are believed. */
type TrustProxy = boolean | number | string | readonly string[];

export interface EdgeOptions {
  readonly logger: Logger;
  readonly metrics: RequestMetrics;
  readonly trustedOrigins: readonly string[];
  /** contract §7: the Host names served; null: any Host. */
  readonly allowedHosts: readonly string[] | null;
  readonly trustProxy: TrustProxy;
  /** One log line per request (ACCESS_LOG). */
  readonly accessLog: boolean;
  /** Server timeouts against slow clients (slowloris): headers, whole request, idle keep-alive. */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /** Catches the memories up before the raw read path answers from them (Stores.freshness). */
  readonly freshness: RawReadDeps['freshness'];
}

export interface Edge {
  readonly fastify: FastifyInstance;
  /** Declares an /api endpoint (and, with a raw reader, its raw read path). */
  readonly endpoint: DeclareEndpoint;
}

/** Paths that go into /api/schema: the API and the health probes, not the web client's files. */
function isPublished(url: string): boolean {
  return url.startsWith('/api/') || url === '/healthz' || url === '/readyz';
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
    // An absolute-form target (RFC 9112 §3.2.2) is routed by its path: its headers are that path's.
    const url = targetPath(request.url);
    reply.headers(responseHeaders({ url, requestId: request.id, origin: request.headers.origin }, trusted));
    if (!hasOneHost(request.raw.rawHeaders)) return new ApiError(API_ERRORS.INVALID_HOST);
    if (allowed(requestHost(request.url, request.headers.host)) || isProbePath(url)) return null;
    return new ApiError(API_ERRORS.INVALID_HOST);
  };
}

/** The Fastify instance with every mechanism of contract §1 and §7, and no route yet. */
export async function createEdge(options: EdgeOptions): Promise<Edge> {
  const { logger, metrics } = options;
  const trusted: ReadonlySet<string> = new Set(options.trustedOrigins);
  const lifecycle = { closing: false };
  const allowedHost = hostAllowed(options.allowedHosts);
  const entry = edgeEntry(allowedHost, trusted);
  const rawRoutes = new RawRoutes();
  const fastify = Fastify({
    serverFactory: nodeServerFactory({
      raw: rawReads({
        routes: rawRoutes,
        trustedOrigins: trusted,
        hostAllowed: allowedHost,
        metrics,
        logger,
        accessLog: options.accessLog,
        freshness: options.freshness,
        closing: () => lifecycle.closing,
      }),
      logger,
      keepAliveTimeoutMs: options.keepAliveTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs,
      headersTimeoutMs: options.headersTimeoutMs,
    }),
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    // A hop count trusts that many proxies nearest to us (Fastify's own reading of a number).
    trustProxy:
      typeof options.trustProxy === 'number'
        ? trustHops(options.trustProxy)
        : (options.trustProxy as boolean | string | string[]),
    genReqId: requestId,
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
      headersTimeout: options.headersTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, options.headersTimeoutMs),
    },
    requestTimeout: options.requestTimeoutMs,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    connectionTimeout: 0,
    return503OnClosing: true,
    // Schemas describe; they must not rewrite a request (null → "" would hide "may not be null").
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false } },
  });

  if (logger.isLevelEnabled('debug'))
    fastify.addHook('onRequest', (request, _reply, done) => {
      logArrival(request.log as Logger, request.raw);
      done();
    });
  fastify.addHook('onResponse', (request, reply, done) => {
    const url = request.routeOptions.url;
    metrics.observeRequest(
      request.method,
      url === undefined ? 'unmatched' : routeLabel(url),
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    if (options.accessLog)
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
  fastify.addHook('preClose', (done) => {
    lifecycle.closing = true;
    done();
  });
  return { fastify, endpoint: apiEndpoints(fastify, trusted, rawRoutes) };
}
