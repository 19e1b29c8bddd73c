// The wire rules every response obeys (contract §1): security headers, request ids, Allow on /api
// endpoints, OPTIONS/HEAD/405, JSON 404s, and the single place errors become {"detail": ...}.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  RouteHandlerMethod,
} from 'fastify';
import secureJsonParse from 'secure-json-parse';
import {
  API_ERRORS,
  ApiError,
  FieldErrors,
  jsonParseError,
  methodNotAllowed,
  StoreUnavailableError,
  unavailable,
  unsupportedMediaType,
} from './errors.ts';

export const JSON_TYPE = 'application/json';

const SECURITY_HEADERS = {
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
} as const;
/** The headers of every /api response before the endpoint's own: security and caching. */
export const API_HEADERS = { ...SECURITY_HEADERS, 'cache-control': 'no-store' } as const;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a sane incoming X-Request-Id, else makes one (an odd one is replaced, not echoed). */
export function requestId(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Sends an already-serialized JSON body. */
export function sendJson(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type(JSON_TYPE).send(body);
}

function sendDetail(
  reply: FastifyReply,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
) {
  return sendJson(reply.headers(headers), status, JSON.stringify({ detail }));
}

export type ApiMethod = 'GET' | 'POST';

export interface Endpoint {
  /** Route path(s) as Fastify sees them; trailing slashes are ignored by the router. */
  readonly path: string;
  /** Matches the URL path of every request that addresses this endpoint (for 405). */
  readonly matches: RegExp;
  /** Name in the OPTIONS body. */
  readonly name: string;
  readonly handlers: Partial<Record<ApiMethod, RouteHandlerMethod>>;
  /** Route schemas: they shape the responses and are what /api/schema publishes. */
  readonly schemas?: Partial<Record<ApiMethod, FastifySchema>>;
  /** Runs before the body is read (CSRF), for unsafe methods. */
  readonly beforeBody?: (request: FastifyRequest) => void;
}

function allowOf(endpoint: Endpoint): string[] {
  const methods: string[] = [];
  if (endpoint.handlers.GET !== undefined) methods.push('GET', 'HEAD');
  if (endpoint.handlers.POST !== undefined) methods.push('POST');
  methods.push('OPTIONS');
  return methods;
}

export interface WireOptions {
  readonly trustedOrigins: readonly string[];
}

/** The CORS headers of a request from a trusted origin (contract §7), or null. */
export function corsHeaders(
  origin: string | undefined,
  trusted: ReadonlySet<string>,
): Record<string, string> | null {
  if (origin === undefined || !trusted.has(origin)) return null;
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-credentials': 'true',
    vary: 'Origin',
  };
}

/** The headers of every response (contract §1, §7), set before anything else can answer. */
export function standardHeadersFor(
  trustedOrigins: readonly string[],
): (request: FastifyRequest, reply: FastifyReply) => void {
  const trusted = new Set(trustedOrigins);
  return (request, reply) => {
    reply.headers(request.url.startsWith('/api') ? API_HEADERS : SECURITY_HEADERS);
    reply.header('x-request-id', request.id);
    const cors = corsHeaders(request.headers.origin, trusted);
    if (cors !== null) reply.headers(cors);
  };
}

/**
 * Fastify's `frameworkErrors` (an undecodable URL, an over-long parameter): answered before any hook
 * runs, so the standard headers are set here. Such a path names no resource: 404.
 */
export function frameworkErrorsHandler(trustedOrigins: readonly string[]) {
  const standardHeaders = standardHeadersFor(trustedOrigins);
  return (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    standardHeaders(request, reply);
    return sendDetail(reply, 404, API_ERRORS.NOT_FOUND.detail);
  };
}

/** Installs the hooks and handlers of contract §1 and returns a function that registers /api endpoints. */
export function installWire(app: FastifyInstance, options: WireOptions): (endpoint: Endpoint) => void {
  const endpoints: { matches: RegExp; allow: string }[] = [];
  const trusted = new Set(options.trustedOrigins);
  const standardHeaders = standardHeadersFor(options.trustedOrigins);

  app.addHook('onRequest', (request, reply, done) => {
    standardHeaders(request, reply);
    done();
  });

  // Only the JSON and form bodies of contract §3 are read; anything else is a 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(jsonParseError('Unexpected end of JSON input'), undefined);
    try {
      done(null, secureJsonParse(body as string, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      done(jsonParseError(err instanceof Error ? err.message.slice(0, 200) : 'invalid JSON'), undefined);
    }
  });

  app.setNotFoundHandler((request) => {
    const path = request.url.split('?', 1)[0] ?? '';
    const endpoint = endpoints.find((candidate) => candidate.matches.test(path));
    if (endpoint !== undefined) {
      throw methodNotAllowed(request.method, endpoint.allow);
    }
    throw new ApiError(API_ERRORS.NOT_FOUND);
  });

  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (error instanceof ApiError) return sendDetail(reply, error.status, error.detail, { ...error.headers });
    if (error instanceof FieldErrors) return sendJson(reply, 400, JSON.stringify(error.fields));
    if (error instanceof StoreUnavailableError) {
      request.log.warn({ store: error.store, err: error.cause }, 'store unavailable');
      const answer = unavailable();
      return sendDetail(reply, answer.status, answer.detail, { ...answer.headers });
    }
    const mapped = mapFrameworkError(error as FastifyError, request);
    if (mapped !== null) return sendDetail(reply, mapped.status, mapped.detail, { ...mapped.headers });
    request.log.error({ err: error }, 'unhandled error');
    return sendDetail(reply, 500, API_ERRORS.INTERNAL.detail);
  });

  return (endpoint: Endpoint) => {
    const allowList = allowOf(endpoint);
    const allow = allowList.join(', ');
    endpoints.push({ matches: endpoint.matches, allow });
    const onRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      reply.header('allow', allow);
      if (request.method === 'POST') endpoint.beforeBody?.(request);
      done();
    };
    for (const [method, handler] of Object.entries(endpoint.handlers) as [ApiMethod, RouteHandlerMethod][]) {
      // attachValidation: input is checked by the handlers, which answer in the contract's own shapes
      // (DRF field errors, 404 for a bad id) rather than Fastify's.
      app.route({
        method,
        url: endpoint.path,
        onRequest,
        handler,
        schema: endpoint.schemas?.[method],
        attachValidation: true,
      });
    }
    const optionsBody = JSON.stringify({ name: endpoint.name, methods: allowList });
    app.route({
      method: 'OPTIONS',
      url: endpoint.path,
      schema: { hide: true } as FastifySchema,
      onRequest,
      handler: (request, reply) => {
        if (
          request.headers['access-control-request-method'] !== undefined &&
          trusted.has(request.headers.origin ?? '')
        ) {
          reply.headers({
            'access-control-allow-methods': allow,
            'access-control-allow-headers': 'content-type, x-csrftoken, x-request-id',
            'access-control-max-age': '600',
          });
        }
        return sendJson(reply, 200, optionsBody);
      },
    });
  };
}

/** Fastify's own 4xx errors, in the contract's words; null for anything that is a real fault. */
function mapFrameworkError(error: FastifyError, request: FastifyRequest): ApiError | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(API_ERRORS.BODY_TOO_LARGE);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return unsupportedMediaType(request.headers['content-type'] ?? '');
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError({
      code: error.code ?? 'BAD_REQUEST',
      status,
      detail: status === 400 ? API_ERRORS.BAD_REQUEST.detail : error.message,
    });
  }
  return null;
}

/** Answers connection-level errors (malformed HTTP) with the headers and body shape of every response. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) return;
  const status =
    error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const text =
    status === 431
      ? 'Request header fields too large.'
      : status === 408
        ? 'Request timeout.'
        : 'Bad request.';
  const body = JSON.stringify({ detail: text });
  const headers = Object.entries(SECURITY_HEADERS)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request'}\r\n` +
      `content-type: ${JSON_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${headers}\r\n${body}`,
  );
}
