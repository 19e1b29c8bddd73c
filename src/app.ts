// The composition root: the one place where the parts are built and wired, and nothing else. From
// the settings it opens the stores, builds the backends and identity providers, the domain objects
// (sessions, the throttle, who may log in, the login procedure) and the HTTP edge, and declares the
// routes on it. Every layer below takes plain options and the objects it needs; none of them reads a
// setting or builds a neighbour. What runs on a timer (the purge, the group sync's interval) is
// server.ts's.
import type { Logger } from 'pino';
import { LoginProcedure } from './auth/login.ts';
import { OidcSignIn } from './auth/oidc-signin.ts';
import { Sessions, sharedSecret } from './auth/sessions.ts';
import { LoginThrottle } from './auth/throttle.ts';
import { migrateUsernamesAtStart } from './auth/username-migration.ts';
import { WhoMayLogIn } from './auth/who-may-log-in.ts';
import type { Authenticator } from './backends/authenticator.ts';
import { createAuthenticator } from './backends/build.ts';
import type { ImapSeams } from './backends/imap/backend.ts';
import { groupDirectory } from './backends/ldap/groups/reader.ts';
import { readinessOf } from './backends/probe.ts';
import { servingBackends } from './config/backends/chain.ts';
import type { Config } from './config/config.ts';
import { GROUP_JSON } from './groups/json.ts';
import type { GroupSyncOutcome } from './groups/sync/run.ts';
import { intervalRun } from './groups/sync/schedule.ts';
import { textsFromDirectory } from './groups/texts.ts';
import { createEdge } from './http/edge.ts';
import { sessionHooks } from './http/session.ts';
import { registerWebClient } from './http/web.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { registerAuthRoutes } from './routes/auth.ts';
import { registerGroupRoutes } from './routes/groups.ts';
import { registerMembershipRoutes } from './routes/memberships.ts';
import { registerOidcRoutes } from './routes/oidc.ts';
import { registerOps, registerSchemaRoute } from './routes/ops.ts';
import { registerSessionRoutes } from './routes/sessions.ts';
import { GROUP_MEMORY_LIMITS } from './store/freshness/group-memory.ts';
import { SESSION_MEMORY_ENTRIES } from './store/freshness/session-memory.ts';
import { openStores } from './store/open.ts';
import type { MemoryOptions } from './store/options.ts';
import type { Stores } from './store/types.ts';

/**
 * What a serving process keeps in memory: sessions and the group pages, as the group routes write
 * them, made exact by the stores' freshness gate (docs/freshness.md).
 */
export const SERVING_MEMORY: MemoryOptions = {
  sessions: { capacity: SESSION_MEMORY_ENTRIES },
  groups: { json: GROUP_JSON, limits: GROUP_MEMORY_LIMITS },
};

/** How long a readiness answer about a backend is reused (contract §6: probes cannot hammer it). */
const READY_PROBE_TTL_MS = 5000;

export interface AppDeps {
  readonly config: Config;
  readonly logger: Logger;
  /** The stores; when absent they are opened from the settings (and closed with the app). */
  readonly stores?: Stores;
  /** Open the stores migrated (default true; a cluster's workers leave it to the primary). */
  readonly migrate?: boolean;
  /** The authenticator; when absent, the configured backends in order (contract §8). */
  readonly authenticator?: Authenticator;
  /** Seams of the IMAP backends built here (tests script the login, the clock, the timing). */
  readonly imap?: ImapSeams;
  /** Made here when absent. */
  readonly metrics?: Metrics;
  /** Injectable clock (tests move time to expire sessions and throttle windows). */
  readonly now?: () => number;
  /** How a refused login waits out its delay (default a timer; tests record the delay). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The clock a refused login's delay is measured on, in ms (default `performance.now`). */
  readonly loginNow?: () => number;
}

export interface App {
  readonly fastify: import('fastify').FastifyInstance;
  readonly stores: Stores;
  readonly authenticator: Authenticator;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
  readonly metrics: Metrics;
  /**
   * One run of the group sync as the service runs it (contract §11: GROUP_SYNC_INTERVAL); null when
   * no directory is configured. server.ts schedules it, and logs and counts each outcome.
   */
  readonly syncGroups: (() => Promise<GroupSyncOutcome>) | null;
  /** Closes the HTTP edge, then what the app opened itself (stores, backends). */
  close(): Promise<void>;
}

/** Opens the stores of the settings, migrated (stored usernames included, contract §3) unless told not to. */
async function openConfiguredStores(config: Config, logger: Logger, migrate: boolean): Promise<Stores> {
  const stores = await openStores(config.store, {
    migrate,
    // The stores reconnect by themselves; a broken idle connection is only worth a warning.
    onError: (store, err) => logger.warn({ store, err }, 'store connection error'),
    memory: SERVING_MEMORY,
    // Without keyspace events, Redis answers every check itself: slower, never stale.
    onKeyEvents: (flowing, why) =>
      flowing
        ? logger.info({ store: 'sessions' }, `session memory on: ${why}`)
        : logger.warn({ store: 'sessions' }, `session memory off, Redis answers every session: ${why}`),
  });
  if (!migrate) return stores;
  try {
    await migrateUsernamesAtStart(stores, config.usernameCase, (fields, line) => logger.warn(fields, line));
  } catch (err) {
    await stores.close();
    throw err;
  }
  return stores;
}

/** Builds the service; call `fastify.listen` (or `inject`) on the result, and `close` at the end. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const metrics = deps.metrics ?? createMetrics();
  const stores = deps.stores ?? (await openConfiguredStores(config, logger, deps.migrate !== false));
  const authenticator =
    deps.authenticator ??
    createAuthenticator(servingBackends(config.auth.backends), {
      probeTtlMs: READY_PROBE_TTL_MS,
      imap: deps.imap,
      observe: (backend, result, seconds) => metrics.observeAttempt(backend, result, seconds),
    });
  // contract §10: the identity providers; none of them is a backend of the password chain. Their
  // OpenID client and its HTTP stack (openid-client, undici: about 130 files, 0.3 s of CPU at a
  // start without the compile cache) are loaded only when one is configured.
  const oidc = config.auth.providers.length === 0 ? null : await import('./backends/oidc/provider.ts');
  const providers = oidc === null ? [] : config.auth.providers.map(oidc.createOidcBackend);
  const closeOwned = async () => {
    await Promise.all(providers.map((provider) => provider.close()));
    if (deps.stores === undefined) await stores.close();
    if (deps.authenticator === undefined) await authenticator.close();
  };
  try {
    // Handles of sessions (contract §9) are keyed by the same secret as the throttle: one per database.
    const secret = await sharedSecret(config.secretKey, stores);
    const sessions = new Sessions(stores.sessions, now, {
      secret,
      onError: (err) => logger.warn({ err }, 'recording last_seen failed'),
      memory: stores.memory.sessions,
      freshness: stores.freshness,
    });
    const throttle = new LoginThrottle(stores.throttle, config.throttle, secret, now);
    // contract §3, §4: who may log in, one rule for passwords and providers alike.
    const whoMayLogIn = new WhoMayLogIn(stores.users, config.allowNewUsers);
    const login = new LoginProcedure({
      whoMayLogIn,
      sessions,
      throttle,
      authenticator,
      failureDelayMs: config.authFailureDelayMs,
      sleep: deps.sleep,
      now: deps.loginNow,
    });

    const signIn = new OidcSignIn({
      providers,
      flows: stores.flows,
      whoMayLogIn,
      sessions,
      usernameCase: config.usernameCase,
    });
    oidc?.discoverInBackground(providers, (provider, reason) =>
      logger.warn({ provider, reason }, 'identity provider not reached'),
    );

    const { fastify, endpoint } = await createEdge({
      ...config.http,
      logger,
      metrics,
      freshness: stores.freshness,
    });
    const hooks = sessionHooks(fastify, sessions);
    const cookies = { cookieSecure: config.http.cookieSecure, trustedOrigins: config.http.trustedOrigins };
    registerAuthRoutes(endpoint, {
      ...cookies,
      usernameCase: config.usernameCase,
      sessions,
      hooks,
      login,
      metrics,
    });
    registerSessionRoutes(endpoint, { ...cookies, sessions, hooks });
    // contract §12: with passkeys off, their endpoints are not declared (404 as any unknown path),
    // and their WebAuthn library (with its ASN.1 and X.509 parsers: about 380 files, 0.4 s of CPU
    // at a start without the compile cache) is not loaded.
    if (config.passkeys.enabled) {
      const [{ Passkeys }, { registerPasskeyRoutes }] = await Promise.all([
        import('./auth/passkeys.ts'),
        import('./routes/passkeys.ts'),
      ]);
      const passkeys = new Passkeys({
        ...config.passkeys,
        store: stores.passkeys,
        flows: stores.flows,
        users: stores.users,
        sessions,
        whoMayLogIn,
        throttle,
        failureDelayMs: config.authFailureDelayMs,
      });
      registerPasskeyRoutes(endpoint, { ...cookies, passkeys, sessions, hooks, metrics });
    }
    registerOidcRoutes(endpoint, {
      cookieSecure: config.http.cookieSecure,
      signIn,
      sessions,
      metrics,
      passwordLogin: authenticator.backendNames.length > 0,
      passkeys: config.passkeys.enabled,
    });
    registerGroupRoutes(endpoint, {
      hooks,
      sessions,
      groups: stores.groups,
      memory: stores.memory.groups,
      freshness: stores.freshness,
    });
    registerMembershipRoutes(endpoint, {
      trustedOrigins: config.http.trustedOrigins,
      usernameCase: config.usernameCase,
      hooks,
      groups: stores.groups,
      // contract §11, §13: the texts the sync fills from an attribute cannot be edited.
      directoryTexts: textsFromDirectory(config.groupSync?.directory ?? null),
    });
    registerSchemaRoute(fastify, endpoint);
    registerWebClient(fastify);
    registerOps(fastify, {
      stores,
      // contract §8, §10: every backend, then every provider, probed without credentials, by name.
      parts: [() => authenticator.readiness(), readinessOf(providers, READY_PROBE_TTL_MS)],
      metrics: config.metricsPort === null ? metrics : null,
    });
    const sync = config.groupSync;
    const syncGroups =
      sync === null
        ? null
        : intervalRun(
            {
              directory: groupDirectory(sync.directory),
              store: stores.groupSync,
              usernameCase: config.usernameCase,
            },
            sync.maxRemovals,
          );
    // The last sightings are written before the stores close.
    fastify.addHook('onClose', () => sessions.close());
    metrics.setSources({ guard: authenticator, sessions: stores.sessions, now: () => sessions.now() });
    return {
      fastify,
      stores,
      authenticator,
      sessions,
      throttle,
      metrics,
      syncGroups,
      async close() {
        await fastify.close();
        await closeOwned();
      },
    };
  } catch (err) {
    await closeOwned();
    throw err;
  }
}
