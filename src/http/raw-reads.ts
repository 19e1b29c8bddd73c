// The raw read path: the hottest GETs answered on node's request, before Fastify, when the answer
// needs no I/O (issue 8: check is called on every page view of every client; issue 14: so are the
// group pages). Which URLs it answers, their Allow and their bodies are not decided here: an
// endpoint declared with a `fast` reader (endpoints.ts) is entered in this table by the same
// declaration that gives Fastify its routes, routed by the same router (find-my-way, with Fastify's
// options), and its reader is the same function its Fastify route answers from memory with.
// Everything the reader does not answer (a cache miss, no session on a group URL), a query string, a
// Host that ALLOWED_HOSTS refuses, a server that is closing, is left to Fastify, which answers the
// same requests the same way: the headers come from the same builder (headers.ts), the access line
// from access-log.ts, and test/caches/raw-reads.test.ts compares the two byte for byte.
// Stores whose memory is made exact by a look at the store itself (Stores.look: PostgreSQL, Redis;
// issue 24) are answered after that look: a request without a session cookie is read without it (no
// store is touched); one with a cookie waits for the shared look, reads from memory, and otherwise
// hands the request to Fastify (`fallback`), which asks the store: a failed look is never a stale
// answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import { readCookies } from '../auth/cookies.ts';
import type { RequestMetrics } from '../metrics/requests.ts';
import { logArrival, logCompletion } from './access-log.ts';
import { hasOneHost } from './allowed-hosts.ts';
import { JSON_CONTENT_TYPE, responseHeaderList } from './headers.ts';
import { requestId } from './request-id.ts';

/**
 * An answer from memory. `ascii`: the body is a string of ASCII characters only, sent as latin1
 * (no encoding to do); any other string is sent as UTF-8, a Buffer as it is.
 */
export interface FastAnswer {
  readonly status: number;
  readonly body: string | Buffer;
  readonly ascii: boolean;
}

/** What a fast reader is given: the session cookie and the route's path parameters. */
export interface FastRequest {
  readonly sessionid: string | undefined;
  readonly params: Readonly<Record<string, string | undefined>>;
}

/**
 * Answers a GET synchronously from memory, or undefined to leave it to the Fastify route. Without a
 * session cookie it reads no store (the raw path then runs it without Stores.atOnce's look at other
 * processes' commits): what nobody may read is answered, or left to Fastify, from the request alone.
 */
export type FastRead = (request: FastRequest) => FastAnswer | undefined;

/** The stores' in-memory answers a fast reader uses (Stores.look waits for a look at those). */
export type CachedRead = 'sessions' | 'groups';

interface FastRoute {
  readonly read: FastRead;
  readonly reads: readonly CachedRead[];
  readonly allow: string;
  /** The route as the request metrics name it (the Fastify route's label). */
  readonly label: string;
}

type Found = { readonly route: FastRoute; readonly params: FastRequest['params'] };

const NO_PARAMS: FastRequest['params'] = Object.freeze({});

/** The endpoints with a fast reader, routed as Fastify routes them (ignoreTrailingSlash). */
export class FastRoutes {
  readonly #router = FindMyWay({ ignoreTrailingSlash: true, maxParamLength: Number.MAX_SAFE_INTEGER });
  /**
   * A URL without parameters, as written and with a trailing slash, to what the router finds for it
   * (the same route, no parameters): one Map lookup instead of the router's walk and decoding
   * (issue 24). Any other spelling (percent-encoded, a parameter) goes to the router.
   */
  readonly #exact = new Map<string, Found>();

  /** Enters an endpoint (endpoints.ts does, for every declaration with a `fast` reader). */
  add(url: string, route: FastRoute): void {
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
    return found === null ? null : { route: found.store as FastRoute, params: found.params };
  }
}

export interface RawReadDeps {
  readonly routes: FastRoutes;
  readonly trustedOrigins: ReadonlySet<string>;
  readonly hostAllowed: (host: string | undefined) => boolean;
  readonly metrics: RequestMetrics;
  readonly logger: Logger;
  /** ACCESS_LOG: one line per request (access-log.ts). */
  readonly accessLog: boolean;
  /** Runs one request's reads from memory with one look at other processes' commits (Stores.atOnce). */
  readonly atOnce: <T>(work: () => T, reads?: readonly CachedRead[]) => T;
  /** The shared look the reads from memory wait for first (Stores.look); absent: atOnce is enough. */
  readonly look?: (reads: readonly CachedRead[]) => Promise<void>;
  /** True once the server is closing: then Fastify answers (503). */
  readonly closing: () => boolean;
}

/**
 * Answers a request on the raw path (true), or leaves it to Fastify (false); having answered true, it
 * may still hand the request to Fastify later, by calling `fallback` (after a look).
 */
export type RawHandler = (
  request: IncomingMessage,
  response: ServerResponse,
  fallback: () => void,
) => boolean;

/** The raw read handler over the endpoints entered in `deps.routes`. */
export function rawReads(deps: RawReadDeps): RawHandler {
  const { logger, accessLog, routes } = deps;
  return (request, response, fallback) => {
    const { method, url } = request;
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined || deps.closing()) return false;
    if (!url.startsWith('/api/') || url.includes('?')) return false;
    // Refused Hosts are answered by the Fastify route (the one place their 400 is made).
    if (!deps.hostAllowed(request.headers.host) || !hasOneHost(request.rawHeaders)) return false;
    const started = performance.now();
    const found = routes.find(url);
    if (found === null) return false;
    const fast = { sessionid: readCookies(request.headers).sessionid, params: found.params };
    const { look } = deps;
    // No session, no store read (FastRead, contract §2): no look at other processes' commits either.
    // Without a look to wait for (SQLite), atOnce's look is synchronous.
    if (fast.sessionid === undefined || look === undefined) {
      const result =
        fast.sessionid === undefined ? found.route.read(fast) : deps.atOnce(() => found.route.read(fast));
      if (result === undefined) return false;
      send(request, response, found.route, result, started);
      return true;
    }
    // The reader runs once, after the look (it would otherwise hash the session id twice).
    const { reads } = found.route;
    look(reads).then(
      () => {
        let result: FastAnswer | undefined;
        try {
          result = deps.atOnce(() => found.route.read(fast), reads);
        } catch (err) {
          logger.error({ err }, 'raw read path failed');
        }
        if (result === undefined) fallback();
        else send(request, response, found.route, result, started);
      },
      // The store is asked by the Fastify route: its answer, or its 503 (contract §2).
      fallback,
    );
    return true;
  };

  function send(
    request: IncomingMessage,
    response: ServerResponse,
    route: FastRoute,
    result: FastAnswer,
    started: number,
  ): void {
    const { method, url = '' } = request;
    const id = requestId(request);
    logArrival(logger, request, id);
    const headers = responseHeaderList(
      { url, requestId: id, origin: request.headers.origin },
      deps.trustedOrigins,
    );
    const { body, ascii } = result;
    const length = typeof body === 'string' && !ascii ? Buffer.byteLength(body) : body.length;
    headers.push('allow', route.allow, 'content-type', JSON_CONTENT_TYPE, 'content-length', String(length));
    response.writeHead(result.status, headers);
    if (method === 'HEAD') response.end();
    else response.end(body, ascii ? 'latin1' : 'utf8');
    const ms = performance.now() - started;
    deps.metrics.observeRequest(method ?? 'GET', route.label, result.status, ms / 1000);
    if (accessLog) logCompletion(logger, request, result.status, ms, id);
  }
}
