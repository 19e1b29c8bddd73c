// Malformed HTTP (node's clientError: a bad request line, oversized headers, a request timeout) is
// answered on the raw socket, with the security headers and the body shape of every response
// (contract §1); there is no request, so no request id, Host check or /api headers.
import type { Socket } from 'node:net';
import { API_ERRORS, type ApiErrorSpec } from './api-errors.ts';
import { JSON_TYPE, SECURITY_HEADERS } from './headers.ts';
import { STATUS_CODES } from './node-http.ts';

function specOf(code: string | undefined): ApiErrorSpec {
  if (code === 'HPE_HEADER_OVERFLOW') return API_ERRORS.HEADERS_TOO_LARGE;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return API_ERRORS.REQUEST_TIMEOUT;
  return API_ERRORS.BAD_REQUEST;
}

/** Fastify's clientErrorHandler: one JSON answer, then the connection closes. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) return;
  const spec = specOf(error.code);
  const body = JSON.stringify({ detail: spec.detail });
  const headers = Object.entries(SECURITY_HEADERS)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${spec.status} ${STATUS_CODES[spec.status]}\r\n` +
      `content-type: ${JSON_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${headers}\r\n${body}`,
  );
}
