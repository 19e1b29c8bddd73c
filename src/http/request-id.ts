// Request ids (contract §6): an incoming X-Request-Id is kept when it is sane, else one is made. It is
// echoed in the response (headers.ts) and labels the request's log lines (app.ts, raw-reads.ts).
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A made id has a UUID's form: the first 24 characters of a random (version 4) UUID drawn once per
 * run of 2^48 ids, then a counter in the last 12 hex digits. Unique within the process, and across
 * processes and instances as a random UUID is (74 random bits; the version and variant are the
 * random UUID's). An id is a label, not a secret (a client may send its own). Drawing a UUID per
 * request cost a call into the random generator's pool and its refill on every request.
 */
const COUNTER_DIGITS = 12;
const COUNTER_END = 16 ** COUNTER_DIGITS;
let prefix = '';
let counter = COUNTER_END;

function madeId(): string {
  if (counter === COUNTER_END) {
    prefix = randomUUID().slice(0, 36 - COUNTER_DIGITS);
    counter = 0;
  }
  return prefix + (counter++).toString(16).padStart(COUNTER_DIGITS, '0');
}

/** Keeps a sane incoming X-Request-Id, else makes one (an odd one is replaced, not echoed). */
export function requestId(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : madeId();
}
