// What several route modules share (contract §2, §7): the CSRF check of unsafe requests, whether
// cookies are Secure, and the answer that ends a session in the browser. HTTP mechanics, so here
// rather than in one route module that the others import.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clearedSessionCookie, readCookies } from '../auth/cookies.ts';
import { checkCsrf } from '../auth/csrf.ts';
import { API_ERRORS, ApiError } from './api-errors.ts';
import { sendJson } from './headers.ts';

/** contract §3: the body of check for nobody, and of logout. */
export const LOGGED_OUT = '""';

/** A header sent several times, as one value (node joins most of them, not all). */
export function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/** Throws the contract's 403 when an unsafe request fails the cross-origin or token check (§7). */
export function csrfGuard(trustedOrigins: readonly string[]): (request: FastifyRequest) => void {
  return (request) => {
    const verdict = checkCsrf(
      {
        origin: request.headers.origin,
        secFetchSite: singleHeader(request.headers['sec-fetch-site']),
        host: request.headers.host,
        headerToken: singleHeader(request.headers['x-csrftoken']),
        cookieToken: readCookies(request.headers).csrftoken,
      },
      trustedOrigins,
    );
    if (verdict === 'origin') throw new ApiError(API_ERRORS.CSRF_ORIGIN);
    if (verdict === 'token') throw new ApiError(API_ERRORS.CSRF_TOKEN);
  };
}

/** Whether cookies set in answer to `request` are Secure (contract §2). */
export function secureCookies(cookieSecure: boolean, request: FastifyRequest): boolean {
  // Secure when configured, or when a trusted proxy says the client used TLS.
  return cookieSecure || request.protocol === 'https';
}

/** The headers that end the session in the browser (contract §2): cookie expired, Clear-Site-Data. */
export function clearSessionHeaders(cookieSecure: boolean, request: FastifyRequest): Record<string, string> {
  return {
    'set-cookie': clearedSessionCookie(secureCookies(cookieSecure, request)),
    'clear-site-data': '"cookies"',
  };
}

/** Answers as logout does (contract §2): 200 "", the session cookie cleared, Clear-Site-Data. */
export function loggedOut(cookieSecure: boolean, request: FastifyRequest, reply: FastifyReply) {
  reply.headers(clearSessionHeaders(cookieSecure, request));
  return sendJson(reply, 200, LOGGED_OUT);
}
