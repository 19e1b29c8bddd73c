// The /api endpoints (contract §1): each declared once, by its URL, with the routes it serves. The
// router then owns everything about it: every response carries Allow, OPTIONS describes it (and
// answers a trusted CORS preflight, §7), HEAD follows GET (Fastify's exposeHeadRoutes), and every
// other method has a route of its own that answers 405 before the body is read or a session looked at.
// An endpoint with a `rawRead` reader is also entered in the raw read path's table (raw-reads.ts), with
// the same URL and Allow: one declaration for both ways of answering it.
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  preHandlerHookHandler,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteGenericInterface,
  RouteHandlerMethod,
} from 'fastify';
import type { Memory } from '../store/types.ts';
import { methodNotAllowed } from './api-errors.ts';
import { isTrustedPreflight, preflightHeaders } from './cors.ts';
import { sendJson } from './headers.ts';
import { METHODS } from './node-http.ts';
import { HIDDEN } from './openapi.ts';
import type { RawRead, RawRoutes } from './raw-reads.ts';

type Handler<G extends RouteGenericInterface> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  G
>;

interface RouteOptions {
  /** Shapes the response and is what /api/schema publishes. */
  readonly schema: FastifySchema;
  /** Runs after the body is read, before the handler (requireSession, readSession: http/session.ts). */
  readonly preHandler?: preHandlerHookHandler;
}

/** Declares the route of one method on an endpoint. */
type DeclareRoute = <G extends RouteGenericInterface = RouteGenericInterface>(
  options: RouteOptions,
  handler: Handler<G>,
) => void;

/**
 * The methods an endpoint may declare, in the order Allow lists them (HEAD follows GET). Every one
 * but GET is unsafe (RFC 9110 §9.2.1): it runs `beforeBody`, the CSRF check (contract §7).
 */
const DECLARABLE = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
type DeclarableMethod = (typeof DECLARABLE)[number];
const UNSAFE: ReadonlySet<string> = new Set(DECLARABLE.filter((method) => method !== 'GET'));

/** What a route module declares on an endpoint: one route per method. */
type EndpointRoutes = { readonly [M in DeclarableMethod as Lowercase<M>]: DeclareRoute };

interface EndpointOptions {
  /** The Fastify path; a trailing slash is the same endpoint (routerOptions.ignoreTrailingSlash). */
  readonly url: string;
  /** Name in the OPTIONS body. */
  readonly name: string;
  /**
   * Runs on every unsafe method (POST, PUT, PATCH, DELETE) before the body is read: the CSRF check
   * (contract §7 and §9).
   */
  readonly beforeBody?: (request: FastifyRequest) => void;
  /**
   * Answers a GET or HEAD from memory on the raw read path before Fastify, when it can (raw-reads.ts);
   * the GET route must answer the same, and should call the same reader first.
   */
  readonly rawRead?: RawRead;
  /** The memories `rawRead` answers from (default all): what the freshness gate catches up first. */
  readonly rawReadMemories?: readonly Memory[];
}

/** The route as a metric label: the pattern without its regex (`/api/group/:id`). */
export function routeLabel(url: string): string {
  return url.replace(/\(\^[^)]*\)/g, '');
}

/** Makes every method node parses routable, so that an endpoint can answer 405 to any of them. */
export function supportEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method);
  }
}

/** Declares one /api endpoint: `declare` adds its routes; OPTIONS and the 405 route follow from them. */
export type DeclareEndpoint = (options: EndpointOptions, declare: (routes: EndpointRoutes) => void) => void;

/**
 * The endpoint declarer of `app`; trusted origins get their CORS preflight answered (contract §7),
 * and endpoints with a raw reader are entered in `rawRoutes`.
 */
export function apiEndpoints(
  app: FastifyInstance,
  trustedOrigins: ReadonlySet<string>,
  rawRoutes: RawRoutes,
): DeclareEndpoint {
  return (options, declare) => declareEndpoint(app, trustedOrigins, rawRoutes, options, declare);
}

function declareEndpoint(
  app: FastifyInstance,
  trustedOrigins: ReadonlySet<string>,
  rawRoutes: RawRoutes,
  options: EndpointOptions,
  declare: (routes: EndpointRoutes) => void,
): void {
  const { url } = options;
  const declared = new Map<DeclarableMethod, () => void>();
  // attachValidation: input is checked by the handlers, which answer in the contract's own shapes
  // (DRF field errors, 404 for a bad id) rather than Fastify's.
  const routeOf =
    (method: DeclarableMethod): DeclareRoute =>
    (route, handler) => {
      declared.set(method, () =>
        app.route({ method, url, ...routeOptions(route), attachValidation: true, handler }),
      );
    };
  declare({
    get: routeOf('GET'),
    post: routeOf('POST'),
    put: routeOf('PUT'),
    patch: routeOf('PATCH'),
    delete: routeOf('DELETE'),
  });
  const methods = [
    ...DECLARABLE.filter((method) => declared.has(method)).flatMap((method) =>
      method === 'GET' ? ['GET', 'HEAD'] : [method],
    ),
    'OPTIONS',
  ];
  const allow = methods.join(', ');
  // contract §1: OPTIONS and the 405 of a method not declared answer before any session or CSRF check.
  const onRequest = (_request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.header('allow', allow);
    done();
  };
  // contract §7: an unsafe method the endpoint declares is checked before its body is read.
  const onDeclaredRequest = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.header('allow', allow);
    if (UNSAFE.has(request.method)) options.beforeBody?.(request);
    done();
  };
  function routeOptions(route: RouteOptions) {
    return {
      schema: route.schema,
      onRequest: onDeclaredRequest,
      ...(route.preHandler === undefined ? {} : { preHandler: route.preHandler }),
    };
  }
  for (const add of declared.values()) add();
  if (options.rawRead !== undefined) {
    if (!declared.has('GET')) throw new Error(`${url}: a raw reader needs a GET route`);
    const memories = options.rawReadMemories ?? ['sessions', 'groups'];
    rawRoutes.add(url, { read: options.rawRead, memories, allow, label: routeLabel(url) });
  }

  const description = JSON.stringify({ name: options.name, methods });
  app.options(url, { schema: HIDDEN, onRequest }, (request, reply) => {
    if (isTrustedPreflight(request.headers, trustedOrigins)) reply.headers(preflightHeaders(allow));
    return sendJson(reply, 200, description);
  });
  app.route({
    method: app.supportedMethods.filter((method) => !methods.includes(method)),
    url,
    // The route of every method an endpoint refuses (405): not part of the API's description.
    schema: HIDDEN,
    onRequest: [onRequest, (request, _reply, done) => done(methodNotAllowed(request.method, allow))],
    handler: () => {
      throw new Error('unreachable: the onRequest hook answered 405');
    },
  });
}
