// What the Redis stores share: failure mapping, the Lua scripts and the key names (redis.ts holds
// the layout and the session store, throttle.ts the throttle store).
import type { Redis } from 'ioredis';
import { ReplyError } from 'ioredis';
import { StoreUnavailableError } from '../errors.ts';
import { SCRIPTS, type ScriptName } from './scripts.ts';

// Server replies that mean "cannot answer now"; any other reply error is a bug and is rethrown.
const UNAVAILABLE_REPLIES = /^(LOADING|READONLY|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN|OOM|NOREPLICAS)\b/;

/** True when `err` says Redis cannot answer now: not connected, timed out, loading, read-only… */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof ReplyError) return UNAVAILABLE_REPLIES.test(err.message);
  // Everything else ioredis rejects with is about the connection: closed, not writeable, timed
  // out, retries exhausted (MaxRetriesPerRequestError), aborted by a reconnect, a socket error.
  return !(err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError);
}

/** Maps "Redis cannot answer now" to StoreUnavailableError('sessions'); other errors pass. */
export async function mapped<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (isRedisUnavailable(err)) throw new StoreUnavailableError('sessions', { cause: err });
    throw err;
  }
}

export type Scripts = Record<ScriptName, (keys: string[], args: (string | number)[]) => Promise<unknown>>;

/** Registers the Lua scripts (EVALSHA, falling back to EVAL after a Redis restart empties its cache). */
export function defineScripts(client: Redis): Scripts {
  const scripts = {} as Scripts;
  for (const [name, { keys, lua }] of Object.entries(SCRIPTS) as [
    ScriptName,
    (typeof SCRIPTS)[ScriptName],
  ][]) {
    client.defineCommand(`clubhouse_${name}`, { numberOfKeys: keys, lua });
    const command = (client as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>)[
      `clubhouse_${name}`
    ]!;
    scripts[name] = (keys, args) => command.call(client, ...keys, ...args);
  }
  return scripts;
}

/** The key names under `prefix` (the layout is described in redis.ts). */
export function keys(prefix: string) {
  return {
    session: (idHex: string) => `${prefix}session:${idHex}`,
    sessionPrefix: `${prefix}session:`,
    userSessions: (username: string) => `${prefix}user-sessions:${username}`,
    userSessionsPrefix: `${prefix}user-sessions:`,
    expiry: `${prefix}session-expiry`,
    throttle: (key: string) => `${prefix}throttle:${key}`,
    pending: (key: string) => `${prefix}throttle-pending:${key}`,
    knownClients: (username: string) => `${prefix}known-clients:${username}`,
  };
}

export type Keys = ReturnType<typeof keys>;
