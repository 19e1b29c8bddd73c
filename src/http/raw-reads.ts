// The raw read path: the hottest GETs answered on node's request, before Fastify, when the answer
// needs no I/O (issue 8: check is called on every page view of every client; issue 14: so are the
// group pages). It answers
// - GET/HEAD /api/auth/check: no session cookie (403 "") or a session the cache knows (Sessions.peek);
// - GET/HEAD /api/group/ and /api/group/{id}: a session the cache knows and an answer the group
//   cache holds (GroupCache, precomputed JSON).
// Everything else — a cache miss, no session on a group URL, a query string, a Host that
// ALLOWED_HOSTS refuses, a server that is closing — is left to the Fastify routes, which answer the
// same requests the same way: the headers come from the same builder (headers.ts), the access line
// from access-log.ts, and test/api-raw-reads.test.ts compares the two byte for byte.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { readCookies } from '../auth/cookies.ts';
import type { Sessions } from '../auth/sessions.ts';
import { parseGroupId } from '../groups/read.ts';
import type { Metrics } from '../metrics.ts';
import type { GroupCache } from '../store/group-types.ts';
import { logArrival, logCompletion } from './access-log.ts';
import { hasOneHost } from './allowed-hosts.ts';
import { JSON_CONTENT_TYPE, responseHeaderList } from './headers.ts';
import { requestId } from './request-id.ts';

export interface RawReadDeps {
  readonly sessions: Sessions;
  /** The group cache, when the store has one (SQLite); null: the group routes always answer. */
  readonly groups: GroupCache | null;
  readonly trustedOrigins: ReadonlySet<string>;
  readonly hostAllowed: (host: string | undefined) => boolean;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** ACCESS_LOG: one line per request (access-log.ts). */
  readonly accessLog: boolean;
  /** Runs one request's cache reads with one look at other processes' commits (Stores.atOnce). */
  readonly atOnce: <T>(work: () => T) => T;
  /** True once the server is closing: then Fastify answers (503). */
  readonly closing: () => boolean;
}

/** Answers a request on the raw path (true), or leaves it to Fastify (false). */
export type RawHandler = (request: IncomingMessage, response: ServerResponse) => boolean;

const CHECK = '/api/auth/check';
const GROUPS = '/api/group/';
const DETAIL_ROUTE = '/api/group/:id';
// The Allow of these endpoints as http/endpoints.ts derives it from their routes (contract §1).
const ALLOW = 'GET, HEAD, OPTIONS';
const LOGGED_OUT = '""';

/** `ascii`: the body is a string of ASCII characters only, sent as latin1 (no encoding to do). */
type Answer = {
  readonly status: number;
  readonly body: string | Buffer;
  readonly ascii: boolean;
  readonly route: string;
};

/** The raw read handler. */
export function rawReads(deps: RawReadDeps): RawHandler {
  const { logger, accessLog, sessions, groups } = deps;

  /** The answer of the raw path for this URL, or undefined to leave the request to Fastify. */
  const answer = (url: string, request: IncomingMessage): Answer | undefined => {
    if (url === CHECK || url === `${CHECK}/`) {
      const username = sessions.peek(readCookies(request.headers).sessionid);
      if (username === undefined) return undefined;
      return username === null
        ? { status: 403, body: LOGGED_OUT, ascii: true, route: CHECK }
        : { status: 200, body: JSON.stringify(username), ascii: false, route: CHECK };
    }
    if (groups === null || !url.startsWith(GROUPS.slice(0, -1))) return undefined;
    const rest = url === '/api/group' ? '' : url.startsWith(GROUPS) ? url.slice(GROUPS.length) : null;
    if (rest === null) return undefined;
    const segment = rest.endsWith('/') ? rest.slice(0, -1) : rest;
    if (segment.includes('/')) return undefined;
    const id = segment === '' ? null : parseGroupId(segment);
    if (segment !== '' && id === null) return undefined; // 404 or not digits: the route says which
    const sessionid = readCookies(request.headers).sessionid;
    return deps.atOnce(() => groupAnswer(groups, sessionid, id));
  };
  /** The session's and the group cache's answer for one group URL: both from one look at the file. */
  const groupAnswer = (groups: GroupCache, sessionid: string | undefined, id: number | null) => {
    const username = sessions.peek(sessionid);
    if (typeof username !== 'string') return undefined; // 403 comes from requireSession
    const body = id === null ? groups.peekList(username) : groups.peekDetail(id, username);
    if (body === undefined) return undefined;
    const ascii = typeof body === 'string'; // the group cache's contract
    return { status: 200, body, ascii, route: id === null ? '/api/group' : DETAIL_ROUTE };
  };

  return (request, response) => {
    const { method, url } = request;
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined || deps.closing()) return false;
    if (!url.startsWith('/api/')) return false;
    // Refused Hosts are answered by the Fastify route (the one place their 400 is made).
    if (!deps.hostAllowed(request.headers.host) || !hasOneHost(request.rawHeaders)) return false;
    const started = performance.now();
    const result = answer(url, request);
    if (result === undefined) return false;
    const id = requestId(request);
    logArrival(logger, request, id);
    const headers = responseHeaderList(
      { url, requestId: id, origin: request.headers.origin },
      deps.trustedOrigins,
    );
    const { body, ascii } = result;
    const length = typeof body === 'string' && !ascii ? Buffer.byteLength(body) : body.length;
    headers.push('allow', ALLOW, 'content-type', JSON_CONTENT_TYPE, 'content-length', String(length));
    response.writeHead(result.status, headers);
    if (method === 'HEAD') response.end();
    else response.end(body, ascii ? 'latin1' : 'utf8');
    const ms = performance.now() - started;
    deps.metrics.observeRequest(method, result.route, result.status, ms / 1000);
    if (accessLog) logCompletion(logger, request, result.status, ms, id);
    return true;
  };
}
