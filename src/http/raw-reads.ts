// The raw read path: the hottest GETs answered on node's request, before Fastify, when the answer
// needs no I/O beyond the freshness gate's catch-up (check is called on every page view of every
// client; so are the group pages). Which URLs it answers, their Allow and their bodies are not
// decided here: an endpoint declared with a `rawRead` reader (endpoints.ts) is entered in this table by
// the same declaration that gives Fastify its routes, routed by the same router (find-my-way, with
// Fastify's options), and its reader is the function that answers from memory.
// Everything the reader does not answer (not kept in memory, no session on a group URL), a query
// string, a Host that ALLOWED_HOSTS refuses, a server that is closing, is left to Fastify, which
// answers the same requests the same way: the headers come from the same builder (headers.ts), the
// access line from access-log.ts, and test/caches/raw-reads.test.ts compares the two byte for byte.
// A request with a session cookie is answered from memory only after the freshness gate has caught
// the memories up (docs/freshness.md): at once on SQLite, after one shared round trip on PostgreSQL
// and Redis; a catch-up that fails hands the request to Fastify (`fallback`), which asks the store: a
// failed catch-up is never a stale answer. A request without one is read without any store.
import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import { readCookies } from '../auth/cookies.ts';
import type { RequestMetrics } from '../metrics/requests.ts';
import type { FreshnessGate, Memory } from '../store/types.ts';
import { logArrival, logCompletion } from './access-log.ts';
import { hasOneHost } from './allowed-hosts.ts';
import { ApiHeaderTemplate, JSON_CONTENT_TYPE, responseHeaderList } from './headers.ts';
import { requestId } from './request-id.ts';

/**
 * An answer from memory. `ascii`: the body is a string of ASCII characters only, sent as latin1
 * (no encoding to do); any other string is measured, and sent as latin1 too if it turns out ASCII,
 * else as UTF-8; a Buffer as it is.
 */
export interface RawAnswer {
  readonly status: number;
  readonly body: string | Buffer;
  readonly ascii: boolean;
}

/** What a raw reader is given: the session cookie and the route's path parameters. */
export interface RawRequest {
  readonly sessionid: string | undefined;
  readonly params: Readonly<Record<string, string | undefined>>;
}

/**
 * Answers a GET synchronously from memory, or undefined to leave it to the Fastify route. Without a
 * session cookie it reads no memory (the raw path then runs it without a catch-up): what nobody may
 * read is answered, or left to Fastify, from the request alone.
 */
export type RawRead = (request: RawRequest) => RawAnswer | undefined;

interface RawRoute {
  readonly read: RawRead;
  /** The memories `read` answers from: what the gate catches up first. */
  readonly memories: readonly Memory[];
  readonly allow: string;
  /** The route as the request metrics name it (the Fastify route's label). */
  readonly label: string;
}

type Found = { readonly route: RawRoute; readonly params: RawRequest['params'] };

const NO_PARAMS: RawRequest['params'] = Object.freeze({});

/** The endpoints with a raw reader, routed as Fastify routes them (ignoreTrailingSlash). */
export class RawRoutes {
  readonly #router = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: Number.MAX_SAFE_INTEGER });
  /**
   * A URL without parameters, as written and with a trailing slash, to what the router finds for it
   * (the same route, no parameters): one Map lookup instead of the router's walk and decoding. Any
   * other spelling (percent-encoded, a parameter) goes to the router.
   */
  readonly #exact = new Map<string, Found>();

  /** Enters an endpoint (endpoints.ts does, for every declaration with a `rawRead` reader). */
  add(url: string, route: RawRoute): void {
    this.#router.on('GET', url, () => undefined, route);
    if (!url.includes(':') && !url.includes('*')) {
      const bare = url.endsWith('/') ? url.slice(0, -1) : url;
      for (const spelling of [bare, `${bare}/`]) this.#exact.set(spelling, { route, params: NO_PARAMS });
    }
  }

  find(path: string): Found | null {
    const exact = this.#exact.get(path);
    if (exact !== undefined) return exact;
    const found = this.#router.find('GET', path);
    return found === null ? null : { route: found.store as RawRoute, params: found.params };
  }
}

export interface RawReadDeps {
  readonly routes: RawRoutes;
  readonly trustedOrigins: ReadonlySet<string>;
  readonly hostAllowed: (host: string | undefined) => boolean;
  readonly metrics: RequestMetrics;
  readonly logger: Logger;
  /** ACCESS_LOG: one line per request (access-log.ts). */
  readonly accessLog: boolean;
  /** Catches the memories up before they answer (Stores.freshness). */
  readonly freshness: FreshnessGate;
  /** True once the server is closing: then Fastify answers (503). */
  readonly closing: () => boolean;
}

/**
 * Answers a request on the raw path (true), or leaves it to Fastify (false); having answered true, it
 * may still hand the request to Fastify later, by calling `fallback` with it (after a catch-up).
 */
export type RawHandler = (
  request: IncomingMessage,
  response: ServerResponse,
  fallback: (request: IncomingMessage, response: ServerResponse) => void,
) => boolean;

/** The raw read handler over the endpoints entered in `deps.routes`. */
export function rawReads(deps: RawReadDeps): RawHandler {
  const { logger, accessLog, routes } = deps;
  /** Each route's headers without CORS (the usual request: same origin), built at its first answer. */
  const templates = new WeakMap<RawRoute, ApiHeaderTemplate>();
  const templateOf = (route: RawRoute) => {
    let template = templates.get(route);
    if (template === undefined) {
      template = new ApiHeaderTemplate(['allow', route.allow, 'content-type', JSON_CONTENT_TYPE]);
      templates.set(route, template);
    }
    return template;
  };
  return (request, response, fallback) => {
    const { method, url } = request;
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined || deps.closing()) return false;
    if (!url.startsWith('/api/') || url.includes('?')) return false;
    // Refused Hosts are answered by the Fastify route (the one place their 400 is made).
    if (!deps.hostAllowed(request.headers.host) || !hasOneHost(request.rawHeaders)) return false;
    const started = performance.now();
    const found = routes.find(url);
    if (found === null) return false;
    const raw = { sessionid: readCookies(request.headers).sessionid, params: found.params };
    const { route } = found;
    // No session, no memory to read (RawRead, contract §2): no catch-up either.
    if (raw.sessionid === undefined) {
      const result = route.read(raw);
      if (result === undefined) return false;
      send(request, response, route, result, started);
      return true;
    }
    const { freshness } = deps;
    const { memories } = route;
    const catchingUp = freshness.catchUp(memories);
    // Caught up already (SQLite): answer now, or leave it to Fastify at once.
    if (catchingUp === null) {
      const result = freshness.answerFromMemory(() => route.read(raw), memories);
      if (result === undefined) return false;
      send(request, response, route, result, started);
      return true;
    }
    // The reader runs once, after the catch-up (it would otherwise hash the session id twice).
    catchingUp.then(
      () => {
        let result: RawAnswer | undefined;
        try {
          result = freshness.answerFromMemory(() => route.read(raw), memories);
        } catch (err) {
          logger.error({ err }, 'raw read path failed');
        }
        if (result === undefined) fallback(request, response);
        else send(request, response, route, result, started);
      },
      // The store is asked by the Fastify route: its answer, or its 503 (contract §2).
      () => fallback(request, response),
    );
    return true;
  };

  function send(
    request: IncomingMessage,
    response: ServerResponse,
    route: RawRoute,
    result: RawAnswer,
    started: number,
  ): void {
    const { method, url = '' } = request;
    const id = requestId(request);
    logArrival(logger, request, id);
    const { body } = result;
    let { ascii } = result;
    let length = body.length;
    if (typeof body === 'string' && !ascii) {
      length = Buffer.byteLength(body);
      // As many UTF-8 bytes as characters: ASCII, whose latin1 bytes are the same. Sent as latin1,
      // node copies it beside the headers where UTF-8 would encode both (callgrind: 4 700 of a
      // check's 116 000 instructions).
      ascii = length === body.length;
    }
    const { origin } = request.headers;
    let headers: string[];
    // Only a trusted Origin adds headers (cors.ts): any other request's are the route's template.
    if (origin === undefined || !deps.trustedOrigins.has(origin))
      headers = templateOf(route).list(id, length);
    else {
      headers = responseHeaderList({ url, requestId: id, origin }, deps.trustedOrigins);
      headers.push('allow', route.allow, 'content-type', JSON_CONTENT_TYPE, 'content-length', String(length));
    }
    response.writeHead(result.status, headers);
    if (method === 'HEAD') response.end();
    else response.end(body, ascii ? 'latin1' : 'utf8');
    const ms = performance.now() - started;
    deps.metrics.observeRequest(method ?? 'GET', route.label, result.status, ms / 1000);
    if (accessLog) logCompletion(logger, request, result.status, ms, id);
  }
}
