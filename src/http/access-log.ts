// The access log (docs/operations.md: logs): with ACCESS_LOG=true, one `request completed` line per
// request, written the same way by the Fastify routes (app.ts) and the raw read path (raw-reads.ts).
// It is off by default: behind a proxy that logs access (nginx's access_log) a second line per
// request only costs throughput (docs/operations.md, "Logs and memory", gives the figures). What is
// logged either way: the audit line of every login (routes/auth.ts), every 5xx and store outage
// (errors.ts), warnings. At LOG_LEVEL=debug every request is also logged when it arrives.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';

/**
 * The URL as logged: never its query string, which at the identity provider's callback carries the
 * code and the state (contract §10); no other endpoint reads one.
 */
function loggedUrl(url: string | undefined): string | undefined {
  const at = url?.indexOf('?') ?? -1;
  return at < 0 ? url : `${url?.slice(0, at)}?[redacted]`;
}

/** The request as the access log shows it: never its headers (cookies, CSRF tokens), nor its query. */
function described(request: IncomingMessage) {
  return {
    method: request.method,
    url: loggedUrl(request.url),
    host: request.headers.host,
    remoteAddress: request.socket.remoteAddress,
  };
}

/** `log` is the request's logger when it has one (Fastify's carries the id); else the id is added. */
export function logArrival(log: Logger, request: IncomingMessage, requestId?: string): void {
  if (!log.isLevelEnabled('debug')) return;
  log.debug({ requestId, req: described(request) }, 'incoming request');
}

/** The one access line of a request, once its answer is written. */
export function logCompletion(
  log: Logger,
  request: IncomingMessage,
  statusCode: number,
  responseTimeMs: number,
  requestId?: string,
): void {
  log.info(
    { requestId, req: described(request), res: { statusCode }, responseTime: responseTimeMs },
    'request completed',
  );
}
