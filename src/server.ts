// A running service (used by `npm start` and `npm run demo`): the app (app.ts) listening, METRICS_PORT,
// the periodic purge and the group sync's interval (its outcomes logged and counted), started and
// stopped as one.
import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { buildApp } from './app.ts';
import type { Config } from './config/config.ts';
import { syncOutcomeLog } from './groups/sync/run.ts';
import { scheduleGroupSync } from './groups/sync/schedule.ts';
import { serveMetrics } from './http/metrics-port.ts';
import { createMetrics } from './metrics/metrics.ts';

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
  options: {
    readonly migrate?: boolean;
    /** The app's clock (default Date.now): a browser test moves it to age a session (contract §12). */
    readonly now?: () => number;
  } = {},
): Promise<RunningServer> {
  const metrics = createMetrics();
  const app = await buildApp({ config, logger, metrics, migrate: options.migrate, now: options.now });
  const { fastify, sessions, throttle } = app;
  // Under WORKERS the primary serves METRICS_PORT, with the sum over the workers (cluster.ts).
  const metricsServer =
    config.metricsPort === null || cluster.isWorker
      ? null
      : await serveMetrics(metrics, config.host, config.metricsPort);
  // contract §11: the group sync off the request path, one run at a time across instances (a lease).
  const interval = config.groupSync?.intervalMs ?? null;
  const groupSync =
    app.syncGroups === null || interval === null
      ? null
      : scheduleGroupSync(app.syncGroups, interval, (outcome) => {
          // Each run's outcome: one log line (an error when it failed or was held) and the metrics.
          const log = syncOutcomeLog(outcome, 'interval');
          logger[log.level](log.fields, log.message);
          metrics.observeGroupSync(outcome, Date.now());
        });
  const purge = setInterval(() => {
    Promise.all([
      sessions.store.purgeExpired(sessions.now()),
      throttle.purge(),
      app.stores.flows.purgeExpired(sessions.now()),
    ]).catch((err: unknown) => logger.warn({ err }, 'purge of expired sessions failed'));
  }, PURGE_INTERVAL_MS);
  purge.unref();
  try {
    await fastify.listen({ host: config.host, port: config.port });
  } catch (err) {
    clearInterval(purge);
    await groupSync?.stop();
    await metricsServer?.close();
    await app.close();
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
      // A run in progress finishes (its transaction commits or rolls back) before the stores close.
      await groupSync?.stop();
      await metricsServer?.close();
      await app.close();
    },
  };
}
