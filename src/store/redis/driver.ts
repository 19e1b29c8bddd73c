// The Redis side of the session store: the client a target makes (its TLS options, read here), its
// first connection, and its failure mapping. A Redis that cannot answer makes the session and
// throttle stores answer StoreUnavailableError('sessions') (HTTP 503); the client reconnects by itself.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Redis, type RedisOptions, ReplyError } from 'ioredis';
import { StoreUnavailableError } from '../errors.ts';
import type { RedisTarget } from '../options.ts';

/**
 * A command Redis accepted but never answered (a hung server) fails after this long (inTime below),
 * not by ioredis's own commandTimeout: its timer is judged before the process reads its sockets.
 */
const COMMAND_DEADLINE_MS = 2000;
/**
 * A connection not ready after this long (TCP, TLS and the handshake: what ioredis's connectTimeout
 * and commandTimeout bounded, 2 s each) is dropped and tried again (connectWithin below).
 */
const CONNECT_DEADLINE_MS = 4000;

/** Client settings: a dead Redis answers within a bounded time, and the client reconnects forever. */
const REDIS_SETTINGS = {
  // Commands fail at once while disconnected instead of queueing behind a reconnect.
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  // Not ioredis's connectTimeout (its timer is judged before the poll): connectWithin's deadline.
  connectTimeout: 0,
  // Reconnect with a backoff capped at 1 s, forever: the store recovers when Redis is back.
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  lazyConnect: true,
} as const;

/**
 * Sentinel (docs/operations.md, Redis Sentinel): ask the sentinels for the primary on every (re)connect, and drop a connection
 * to a primary that was demoted (READONLY): the next connection goes to the new one. Commands in
 * between fail at once (503), never queue. (ioredis's failoverDetector is left off: its sentinel
 * subscribers outlive quit() and reconnect forever.)
 */
const SENTINEL_SETTINGS = {
  role: 'master',
  // The sentinels' connections as well as the primary's (connectWithin watches the primary's only).
  connectTimeout: 2000,
  sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
  sentinelCommandTimeout: 2000,
  reconnectOnError: (err: Error) => /^READONLY\b/.test(err.message),
} as const;

/** Longest start-up wait for a first connection (ioredis itself retries a sentinel list forever). */
const FIRST_CONNECT_DEADLINE_MS = 10_000;

/** The ioredis `tls` option for a standalone target: verification always on. Reads the CA file. */
function redisTlsOptions(target: RedisTarget): ConnectionOptions | undefined {
  if (target.kind !== 'standalone' || !target.tls) return undefined;
  return target.caFile === null
    ? { rejectUnauthorized: true }
    : { rejectUnauthorized: true, ca: readFileSync(target.caFile, 'utf8') };
}

function createClient(target: RedisTarget): Redis {
  if (target.kind === 'sentinel') {
    return new Redis({
      ...REDIS_SETTINGS,
      ...SENTINEL_SETTINGS,
      sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
      name: target.name,
    });
  }
  const tls = redisTlsOptions(target);
  const client = new Redis(target.url, tls === undefined ? REDIS_SETTINGS : { ...REDIS_SETTINGS, tls });
  connectWithin(client);
  return client;
}

/**
 * A connect timeout judged after a poll (deadlineAfterPoll): each connection of `client` not ready
 * CONNECT_DEADLINE_MS after it began (a server that does not accept, or accepts and never answers
 * the handshake) is destroyed, and the client tries again (retryStrategy); one made while the process
 * was not running is taken. For a standalone target's client and its duplicates (duplicateClient).
 */
function connectWithin(client: Redis): void {
  let deadline: { cancel(): void } | null = null;
  const settled = () => {
    deadline?.cancel();
    deadline = null;
  };
  client.on('connecting', () => {
    settled();
    deadline = deadlineAfterPoll(CONNECT_DEADLINE_MS, () => {
      deadline = null;
      if (client.status === 'connecting' || client.status === 'connect')
        client.stream?.destroy(new Error('connect ETIMEDOUT'));
    });
  });
  for (const event of ['ready', 'close', 'end']) client.on(event, settled);
}

/**
 * Another connection to `main`'s Redis (key-events.ts's subscribed one): ioredis's duplicate takes
 * the options, connectTimeout 0 among them, but not the listeners, so it is watched here as `main` is.
 */
export function duplicateClient(main: Redis, override: Partial<RedisOptions>): Redis {
  const duplicate = main.duplicate(override);
  if (main.options.connectTimeout === 0) connectWithin(duplicate);
  return duplicate;
}

/** A client connected to `target`; StoreUnavailableError with the reason when Redis is down. */
export async function connectRedis(target: RedisTarget, onError: (err: Error) => void): Promise<Redis> {
  const client = createClient(target);
  // Without a listener every reconnect attempt would print "Unhandled error event".
  client.on('error', onError);
  // ioredis rejects connect() with "Connection is closed."; the reason (a refused certificate,
  // say) came as an 'error' event first, and is what an operator needs to read.
  let reason: Error | undefined;
  const remember = (err: Error) => {
    reason = err;
  };
  client.on('error', remember);
  let deadline: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        deadline = setTimeout(
          () => reject(new Error(`no Redis primary after ${FIRST_CONNECT_DEADLINE_MS} ms`)),
          FIRST_CONNECT_DEADLINE_MS,
        );
      }),
    ]);
  } catch (err) {
    client.disconnect();
    throw new StoreUnavailableError('sessions', { cause: reason ?? err });
  } finally {
    clearTimeout(deadline);
    client.removeListener('error', remember);
  }
  return client;
}

// Server replies that mean "cannot answer now"; any other reply error is a bug and is rethrown.
const UNAVAILABLE_REPLIES = /^(LOADING|READONLY|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN|OOM|NOREPLICAS)\b/;

/** True when `err` says Redis cannot answer now: not connected, timed out, loading, read-only… */
function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof ReplyError) return UNAVAILABLE_REPLIES.test(err.message);
  // Everything else ioredis rejects with is about the connection: closed, not writeable, timed
  // out, retries exhausted (MaxRetriesPerRequestError), aborted by a reconnect, a socket error.
  return !(err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError);
}

/**
 * Calls `expired` once `ms` have passed and the process has then read what its sockets hold.
 * Timers run before the event loop polls its sockets: a process that did not run for `ms` (a crowded
 * host, a long collection) would otherwise find a deadline passed while the answer it waits for sits
 * unread in its socket, and fail for nothing. So the verdict waits for one poll after the deadline
 * (setImmediate runs after it); `cancel` stops it.
 */
export function deadlineAfterPoll(ms: number, expired: () => void): { cancel(): void } {
  let immediate: NodeJS.Immediate | null = null;
  const timer = setTimeout(() => {
    immediate = setImmediate(expired);
  }, ms);
  return {
    cancel() {
      clearTimeout(timer);
      if (immediate !== null) clearImmediate(immediate);
    },
  };
}

/**
 * The reply of a command already sent, or "Command timed out" when Redis has not answered within
 * COMMAND_DEADLINE_MS of the process's own running (deadlineAfterPoll): a hung server fails the
 * command, a process the host did not run for a while does not. Every command goes through it.
 */
export function inTime<T>(reply: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const deadline = deadlineAfterPoll(COMMAND_DEADLINE_MS, () => reject(new Error('Command timed out')));
    reply.then(
      (value) => {
        deadline.cancel();
        resolve(value);
      },
      (err: unknown) => {
        deadline.cancel();
        reject(err);
      },
    );
  });
}

/**
 * Maps "Redis cannot answer now" (inTime's deadline included) to StoreUnavailableError('sessions');
 * other errors pass.
 */
export async function mapped<T>(work: Promise<T>): Promise<T> {
  try {
    return await inTime(work);
  } catch (err) {
    if (isRedisUnavailable(err)) throw new StoreUnavailableError('sessions', { cause: err });
    throw err;
  }
}

/** Runs a MULTI; a command that failed inside it fails the whole call, mapped like any other. */
export async function execMulti(multi: ReturnType<Redis['multi']>): Promise<void> {
  const results = await mapped(multi.exec());
  // null: the transaction was discarded (a connection lost between MULTI and EXEC).
  if (results === null) throw new StoreUnavailableError('sessions');
  for (const [err] of results) {
    if (err !== null) {
      if (isRedisUnavailable(err)) throw new StoreUnavailableError('sessions', { cause: err });
      throw err;
    }
  }
}
