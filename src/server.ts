// A running service: stores, IMAP authenticator, HTTP listener and the periodic purge, started and
// stopped as one (used by `npm start` and `npm run demo`).
import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { findingText, migrateUsernames } from './auth/username-migration.ts';
import { createAuthenticator } from './backends/build.ts';
import type { Config } from './config/config.ts';
import { storeOptions } from './config/store-options.ts';
import { GROUP_JSON } from './groups/json.ts';
import { buildApp, READY_PROBE_TTL_MS } from './http/app.ts';
import { createMetrics, serveMetrics } from './metrics.ts';
import { openStores } from './store/open.ts';

const PURGE_INTERVAL_MS = 10 * 60 * 1000;

export interface RunningServer {
  /** e.g. http://127.0.0.1:8000 */
  readonly url: string;
  /** The metrics listener on METRICS_PORT, when configured. */
  readonly metricsUrl: string | null;
  /** Stops accepting, lets in-flight requests finish, then closes the stores. */
  close(): Promise<void>;
}

/** Starts serving `config` until `close()`; `options.migrate: false` in a cluster's workers. */
export async function startServer(
  config: Config,
  logger: Logger,
  options: { readonly migrate?: boolean } = {},
): Promise<RunningServer> {
  const stores = await openStores(storeOptions(config), {
    migrate: options.migrate,
    // The stores reconnect by themselves; a broken idle connection is only worth a warning.
    onError: (store, err) => logger.warn({ store, err }, 'store connection error'),
    // The group answers this process serves, kept in memory where the store can (issue 14).
    groupJson: GROUP_JSON,
  });
  if (options.migrate !== false) {
    try {
      // contract §3: stored usernames in canonical form; each change is for an administrator to see.
      for (const finding of await migrateUsernames(stores, config.usernameCase))
        logger.warn({ username: finding.username, outcome: finding.outcome }, findingText(finding, true));
    } catch (err) {
      await stores.close();
      throw err;
    }
  }
  const metrics = createMetrics();
  // contract §8: the configured backends, asked in order (default: the one IMAP server of §5).
  const authenticator = createAuthenticator(config.auth.backends, {
    probeTtlMs: READY_PROBE_TTL_MS,
    observe: (backend, result, seconds) => {
      if (backend.kind === 'imap') metrics.observeImap(result, seconds);
      metrics.observeBackend(backend.name, result, seconds);
    },
  });
  const { fastify, sessions, throttle } = await buildApp({ config, stores, authenticator, logger, metrics });
  // Under WORKERS the primary serves METRICS_PORT, with the sum over the workers (cluster.ts).
  const metricsServer =
    config.metricsPort === null || cluster.isWorker
      ? null
      : await serveMetrics(
          { text: () => metrics.text(), contentType: metrics.registry.contentType },
          config.host,
          config.metricsPort,
        );
  const purge = setInterval(() => {
    Promise.all([sessions.store.purgeExpired(sessions.now()), throttle.purge()]).catch((err: unknown) =>
      logger.warn({ err }, 'purge of expired sessions failed'),
    );
  }, PURGE_INTERVAL_MS);
  purge.unref();
  try {
    await fastify.listen({ host: config.host, port: config.port });
  } catch (err) {
    clearInterval(purge);
    await metricsServer?.close();
    await stores.close();
    await authenticator.close?.();
    throw err;
  }
  const address = fastify.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host}:${port}`,
    metricsUrl: metricsServer?.url ?? null,
    async close() {
      clearInterval(purge);
      await fastify.close();
      await metricsServer?.close();
      await stores.close();
      await authenticator.close?.();
    },
  };
}
