// The hot path of GET/HEAD /api/auth/check (issue 8: it is called on every page view of every
// client), answered on the raw node:http request before Fastify when the answer needs no I/O: no
// session cookie, or a session the store answers from memory (Sessions.peek). Everything else —
// a cache miss, a query string, a store that must be asked, a server that is closing — goes to the
// Fastify route, which answers the same requests the same way (test/fast-check.test.ts compares
// the two byte for byte, headers included).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { readCookies } from './cookies.ts';
import type { Metrics } from './metrics.ts';
import type { Sessions } from './sessions.ts';
import { API_HEADERS, corsHeaders, JSON_TYPE, requestId } from './wire.ts';

export interface FastCheckDeps {
  readonly sessions: Sessions;
  readonly trustedOrigins: readonly string[];
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** True once the server is closing: then Fastify answers (503). */
  readonly closing: () => boolean;
}

const ROUTE = '/api/auth/check';
const ALLOW = 'GET, HEAD, OPTIONS';
const CONTENT_TYPE = `${JSON_TYPE}; charset=utf-8`;
const LOGGED_OUT = '""';

/** A request handler that answers what it can and returns false for the rest. */
export function fastCheck(
  deps: FastCheckDeps,
): (request: IncomingMessage, response: ServerResponse) => boolean {
  const trusted = new Set(deps.trustedOrigins);
  return (request, response) => {
    const { method, url } = request;
    if ((method !== 'GET' && method !== 'HEAD') || (url !== ROUTE && url !== `${ROUTE}/`) || deps.closing())
      return false;
    const started = performance.now();
    const username = deps.sessions.peek(readCookies(request.headers).sessionid);
    if (username === undefined) return false;
    const id = requestId(request);
    const logging = deps.logger.isLevelEnabled('info');
    const log = logging ? deps.logger.child({ requestId: id }) : null;
    log?.info(
      { req: { method, url, host: request.headers.host, remoteAddress: request.socket.remoteAddress } },
      'incoming request',
    );
    const status = username === null ? 403 : 200;
    const body = username === null ? LOGGED_OUT : JSON.stringify(username);
    const headers: Record<string, string | number> = {
      ...API_HEADERS,
      'x-request-id': id,
      ...corsHeaders(request.headers.origin, trusted),
      allow: ALLOW,
      'content-type': CONTENT_TYPE,
      'content-length': Buffer.byteLength(body),
    };
    response.writeHead(status, headers);
    response.end(method === 'HEAD' ? undefined : body);
    const seconds = (performance.now() - started) / 1000;
    deps.metrics.observeRequest(method, ROUTE, status, seconds);
    log?.info({ res: { statusCode: status }, responseTime: seconds * 1000 }, 'request completed');
    return true;
  };
}
