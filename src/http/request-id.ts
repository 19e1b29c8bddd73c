// Request ids (contract §6): an incoming X-Request-Id is kept when it is sane, else one is made. It is
// echoed in the response (headers.ts) and labels the request's log lines (app.ts, raw-reads.ts).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a sane incoming X-Request-Id, else makes one (an odd one is replaced, not echoed). */
export function requestId(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
