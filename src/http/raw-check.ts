// The raw check path: GET/HEAD /api/auth/check answered on node's request, before Fastify, when the
// answer needs no I/O (issue 8: check is called on every page view of every client): no session
// cookie, or a session the store's in-memory cache knows (Sessions.peek). Everything else — a cache
// miss, a query string, a Host that ALLOWED_HOSTS refuses, a server that is closing — is left to the
// Fastify route, which answers the same requests the same way: the headers come from the same
// builder (headers.ts), and test/raw-check.test.ts compares the two byte for byte.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { readCookies } from '../auth/cookies.ts';
import type { Sessions } from '../auth/sessions.ts';
import type { Metrics } from '../metrics.ts';
import { logArrival, logCompletion } from './access-log.ts';
import { JSON_CONTENT_TYPE, responseHeaders } from './headers.ts';
import { requestId } from './request-id.ts';

export interface RawCheckDeps {
  readonly sessions: Sessions;
  readonly trustedOrigins: ReadonlySet<string>;
  readonly hostAllowed: (host: string | undefined) => boolean;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** ACCESS_LOG: one line per request (access-log.ts). */
  readonly accessLog: boolean;
  /** True once the server is closing: then Fastify answers (503). */
  readonly closing: () => boolean;
}

/** Answers a request on the raw path (true), or leaves it to Fastify (false). */
export type RawHandler = (request: IncomingMessage, response: ServerResponse) => boolean;

const ROUTE = '/api/auth/check';
// The Allow of the check endpoint as http/endpoints.ts derives it from its routes (contract §1).
const ALLOW = 'GET, HEAD, OPTIONS';
const LOGGED_OUT = '""';

/** The raw check handler. */
export function rawCheck(deps: RawCheckDeps): RawHandler {
  const { logger, accessLog } = deps;
  return (request, response) => {
    const { method, url } = request;
    if ((method !== 'GET' && method !== 'HEAD') || (url !== ROUTE && url !== `${ROUTE}/`) || deps.closing())
      return false;
    if (!deps.hostAllowed(request.headers.host)) return false;
    const started = performance.now();
    const username = deps.sessions.peek(readCookies(request.headers).sessionid);
    if (username === undefined) return false;
    const id = requestId(request);
    logArrival(logger, request, id);
    const status = username === null ? 403 : 200;
    const body = username === null ? LOGGED_OUT : JSON.stringify(username);
    const headers = responseHeaders(
      { url, requestId: id, origin: request.headers.origin },
      deps.trustedOrigins,
    );
    headers['allow'] = ALLOW;
    headers['content-type'] = JSON_CONTENT_TYPE;
    headers['content-length'] = String(Buffer.byteLength(body));
    response.writeHead(status, headers);
    response.end(method === 'HEAD' ? undefined : body);
    const ms = performance.now() - started;
    deps.metrics.observeRequest(method, ROUTE, status, ms / 1000);
    if (accessLog) logCompletion(logger, request, status, ms, id);
    return true;
  };
}
