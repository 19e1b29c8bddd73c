// Builds a clubhouse instance for a test: its own stores, captured logs, an injectable clock,
// and either the real IMAP authenticator (against the harness Dovecot) or a counting fake. The
// stores are a fresh SQLite file unless the test names another store (helpers/stores.ts: a suite
// runs on several with describeEachStore and hands each to startTestApp).
import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { type App, buildApp, SERVING_MEMORY } from '../../src/app.ts';
import type { Authenticator, VerifyResult } from '../../src/backends/authenticator.ts';
import type { ImapSeams } from '../../src/backends/imap/backend.ts';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logger.ts';
import { openStores } from '../../src/store/open.ts';
import type { Stores } from '../../src/store/types.ts';
import type { Dovecot } from './dovecot.ts';
import { dumpOutput, recordSecrets } from './secrets.ts';
import { SQLITE, type StoreData, type TestStore } from './stores.ts';

export interface TestApp extends App {
  readonly config: Config;
  readonly stores: Stores;
  readonly logs: string[];
  readonly clock: { now: number; advance(ms: number): void };
  /** The store settings of this app, for a CLI run or a second instance on the same stores. */
  readonly storeEnv: Readonly<Record<string, string>>;
  /** Everything the session, throttle and flow stores keep, as text (stores.ts: StoreData.dump). */
  dump(): Promise<string>;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** The stores to run on (a fresh database of this kind); default SQLite. */
  readonly store?: TestStore;
  /**
   * Or a database made beforehand (`store.create()`), which close() leaves in place: for many apps
   * in turn on one database, emptied between them with `data.reset`.
   */
  readonly data?: StoreData;
  /** Settings as environment variables; they win over the store's (a second app on the same data). */
  readonly env?: Record<string, string>;
  /** Use the real IMAP authenticator against this Dovecot (plain port on loopback unless env says else). */
  readonly dovecot?: Dovecot;
  /** Seams of that real IMAP authenticator (its clock, its login function, its refusal timing). */
  readonly imap?: ImapSeams;
  readonly authenticator?: Authenticator;
  /** How a refused login waits out its delay (default the real timer). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The clock a refused login's delay is measured on (default `performance.now`). */
  readonly loginNow?: () => number;
  /** Start the clock here instead of following real time. */
  readonly fixedClock?: boolean;
}

/** Environment that points the service at a harness Dovecot over implicit TLS with the harness CA. */
export function dovecotEnv(
  dovecot: Dovecot,
  security: 'tls' | 'starttls' | 'plain' = 'tls',
): Record<string, string> {
  return {
    IMAP_HOST: 'localhost',
    IMAP_PORT: String(security === 'tls' ? dovecot.tlsPort : dovecot.plainPort),
    IMAP_SECURITY: security,
    IMAP_CA_FILE: dovecot.caFile,
    IMAP_TIMEOUT_MS: '15000',
  };
}

/** A clubhouse app on a fresh database (or `data`); close() removes everything it made. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const made = options.data ?? (await (options.store ?? SQLITE).create());
  const drop = () => (options.data === undefined ? made.drop() : Promise.resolve());
  let stores: Stores | undefined;
  try {
    const env = {
      ...made.env,
      LOG_LEVEL: 'info',
      // Every request's line too (off by default), so the tests see and scan everything logged.
      ACCESS_LOG: 'true',
      // No failure floor unless a test is about it (login/failure-floor): refusals answer at once.
      AUTH_FAILURE_DELAY_MS: '0',
      ...(options.dovecot === undefined
        ? { IMAP_HOST: '127.0.0.1', IMAP_SECURITY: 'plain', IMAP_PORT: '1' }
        : dovecotEnv(options.dovecot)),
      ...options.env,
    };
    const config = loadConfig(env);
    const logs: string[] = [];
    const sink = lineSink(logs);
    const clock = {
      now: Date.now(),
      advance(ms: number) {
        this.now += ms;
      },
    };
    const storeEnv: Record<string, string> = { DATABASE_URL: config.databaseUrl };
    if (config.databaseCaFile !== null) storeEnv['DATABASE_CA_FILE'] = config.databaseCaFile;
    if (config.databaseTransactionPooler) storeEnv['DATABASE_TRANSACTION_POOLER'] = 'true';
    if (config.redisCaFile !== null) storeEnv['REDIS_CA_FILE'] = config.redisCaFile;
    if (config.sessionStore !== null) {
      storeEnv['SESSION_STORE'] = config.sessionStore;
      storeEnv['REDIS_KEY_PREFIX'] = config.redisKeyPrefix;
    }
    // As the server opens them (app.ts): with the memories it serves from.
    const opened = await openStores(config.store, { memory: SERVING_MEMORY });
    stores = opened;
    // Without an authenticator of the test's, the configured backends (the IMAP one by default).
    const app = await buildApp({
      config,
      stores: opened,
      authenticator: options.authenticator,
      imap: options.imap,
      logger: createLogger(config.logLevel, sink),
      now: options.fixedClock === true ? () => clock.now : Date.now,
      sleep: options.sleep,
      loginNow: options.loginNow,
    });
    await app.fastify.ready();
    return {
      ...app,
      config,
      stores: opened,
      logs,
      clock,
      storeEnv,
      dump: () => made.dump(opened),
      async close() {
        await app.close();
        await opened.close();
        await drop();
        dumpOutput(logs.join('\n'));
      },
    };
  } catch (err) {
    // Nothing made for an app that did not start may outlive it (a database, keys, the temp dir).
    await stores?.close();
    await drop();
    throw err;
  }
}

/**
 * What a fake authenticator has beside verify: one password backend that is never probed (so /readyz
 * names none), nothing to close, an idle guard.
 */
export const FAKE_CHAIN = {
  backendNames: ['fake'],
  readiness: async () => ({}),
  close: async () => undefined,
  stats: () => ({ active: 0, queued: 0, breaker: 'closed' }),
};

/** A fake authenticator that accepts `passwords` and counts calls (for tests that are not about IMAP). */
export function fakeAuthenticator(passwords: Record<string, string>): Authenticator & { calls: number } {
  const fake = {
    calls: 0,
    async verify(username: string, password: string): Promise<VerifyResult> {
      fake.calls++;
      return passwords[username] === password
        ? { ok: true }
        : { ok: false, failure: 'bad_credentials', reason: 'IMAP [AUTHENTICATIONFAILED]' };
    },
    // It refuses at once, so a refusal decided without it takes no time either (contract §3).
    refusalDelayMs: () => 0,
    maxVerifyMs: 1000,
    ...FAKE_CHAIN,
  };
  return fake;
}

/** The cookies a response sets, by name, with their raw `Set-Cookie` lines. */
export function setCookies(response: LightMyRequestResponse): Map<string, { value: string; raw: string }> {
  const header = response.headers['set-cookie'];
  const lines = header === undefined ? [] : Array.isArray(header) ? header : [header];
  const out = new Map<string, { value: string; raw: string }>();
  for (const raw of lines) {
    const [pair = ''] = raw.split(';');
    const index = pair.indexOf('=');
    out.set(pair.slice(0, index), { value: pair.slice(index + 1), raw });
  }
  return out;
}

/** Logs in through the API; returns the response and the cookie header for later requests. */
export async function loginAs(
  fastify: FastifyInstance,
  username: string,
  password: string,
  headers: Record<string, string> = {},
  remoteAddress?: string,
): Promise<{ response: LightMyRequestResponse; cookie: string; sessionid: string; csrftoken: string }> {
  const response = await fastify.inject({
    method: 'POST',
    url: '/api/auth/login',
    ...(remoteAddress === undefined ? {} : { remoteAddress }),
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify({ username, password }),
  });
  const cookies = setCookies(response);
  const sessionid = cookies.get('sessionid')?.value ?? '';
  const csrftoken = cookies.get('csrftoken')?.value ?? '';
  recordSecrets(password, sessionid, csrftoken);
  return { response, cookie: `sessionid=${sessionid}; csrftoken=${csrftoken}`, sessionid, csrftoken };
}

/** A logger's destination that keeps each line it is given (empty ones left out), as `parse` reads it. */
export function lineSink<T = string>(into: T[], parse: (line: string) => T = (line) => line as T): Writable {
  return new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line !== '') into.push(parse(line));
      callback();
    },
  });
}
