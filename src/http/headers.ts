// The response builder (contract §1, §6, §7): the headers every response starts with, computed in one
// place for the Fastify routes (app.ts's first onRequest hook) and the raw read path (raw-reads.ts),
// so that a header added here appears on every answer. JSON bodies are sent by sendJson/sendDetail.
import type { FastifyReply } from 'fastify';
import { corsHeaders } from './cors.ts';

export const JSON_TYPE = 'application/json';
/** What Fastify's reply.type(JSON_TYPE) sends; the raw path sends the same bytes. */
export const JSON_CONTENT_TYPE = `${JSON_TYPE}; charset=utf-8`;

/** contract §1: on every response, errors, redirects and 404s included. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};
/** contract §1: every response under /api is also never cached. */
const API_HEADERS: Readonly<Record<string, string>> = { ...SECURITY_HEADERS, 'cache-control': 'no-store' };

/** What the standard headers of a response depend on. */
export interface ResponseTarget {
  readonly url: string;
  readonly requestId: string;
  readonly origin: string | undefined;
}

/** The headers every response starts with: security (+ no-store under /api), request id, CORS. */
export function responseHeaders(
  target: ResponseTarget,
  trustedOrigins: ReadonlySet<string>,
): Record<string, string> {
  return {
    ...(target.url.startsWith('/api') ? API_HEADERS : SECURITY_HEADERS),
    'x-request-id': target.requestId,
    ...corsHeaders(target.origin, trustedOrigins),
  };
}

const flat = (headers: Readonly<Record<string, string>>) => Object.entries(headers).flat();
const SECURITY_LIST: readonly string[] = flat(SECURITY_HEADERS);
const API_LIST: readonly string[] = flat(API_HEADERS);

/**
 * responseHeaders as the flat [name, value, …] list res.writeHead also takes, in the same order: the
 * raw read path's form (no object to build and walk per request on the hottest path).
 */
export function responseHeaderList(target: ResponseTarget, trustedOrigins: ReadonlySet<string>): string[] {
  // concat: one copy of a packed array (a spread walks the iterator protocol).
  const list = (target.url.startsWith('/api') ? API_LIST : SECURITY_LIST).concat(
    'x-request-id',
    target.requestId,
  );
  const cors = corsHeaders(target.origin, trustedOrigins);
  if (cors !== null) list.push(...flat(cors));
  return list;
}

/**
 * The headers of the raw read path's answers from one endpoint, for a request without CORS headers:
 * responseHeaderList for an /api URL, then `tail` (the endpoint's fixed headers) and content-length,
 * built once. A request fills in its id and length in a copy of the template (no header list is
 * assembled per request).
 */
export class ApiHeaderTemplate {
  readonly #template: readonly string[];
  readonly #idAt: number;
  readonly #lengthAt: number;

  constructor(tail: readonly string[]) {
    this.#template = [...API_LIST, 'x-request-id', '', ...tail, 'content-length', ''];
    this.#idAt = API_LIST.length + 1;
    this.#lengthAt = this.#template.length - 1;
  }

  /** The list for a request with `requestId` and a body of `length` bytes. */
  list(requestId: string, length: number): string[] {
    const list = this.#template.slice();
    list[this.#idAt] = requestId;
    list[this.#lengthAt] = String(length);
    return list;
  }
}

/** Sends an already-serialized JSON body (a Buffer holds UTF-8: Fastify adds the charset only to strings). */
export function sendJson(reply: FastifyReply, status: number, body: string | Buffer): FastifyReply {
  return reply.code(status).type(JSON_CONTENT_TYPE).send(body);
}

/** Sends `{"detail": ...}` (contract §1: the body of every error), with extra headers (Allow, Retry-After). */
export function sendDetail(
  reply: FastifyReply,
  status: number,
  detail: string,
  headers: Readonly<Record<string, string>> = {},
): FastifyReply {
  return sendJson(reply.headers(headers), status, JSON.stringify({ detail }));
}
