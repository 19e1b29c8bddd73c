// The service as `npm start` runs it (main.ts): settings, then the server; drains and exits 0 on
// SIGTERM/SIGINT. With WORKERS > 1 this process becomes the cluster's primary (cluster.ts) and every
// worker runs this same function down to the server.
import cluster from 'node:cluster';
import { runPrimary } from './cluster.ts';
import { servingBackends } from './config/backends/chain.ts';
import { type Config, ConfigError, environmentWithDotenv, loadConfig } from './config/config.ts';
import { createLogger } from './logger.ts';

function configOrExit(): Config {
  try {
    const config = loadConfig(environmentWithDotenv());
    // What serving needs beyond what the admin CLI does (an IMAP host), refused here as a setting.
    servingBackends(config.auth.backends);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`clubhouse: invalid setting ${err.message}\n`);
    process.exit(2);
  }
}

/** Serves until SIGTERM or SIGINT, then exits: 2 on an invalid setting, 1 when it cannot start. */
export async function serve(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger(config.logLevel);
  if (config.workers > 1 && cluster.isPrimary) {
    process.exit(await runPrimary(config, logger));
  }
  try {
    // Imported here, not above: a WORKERS primary serves no request, and the server's modules
    // (Fastify, the routes and their schemas, the backends' libraries) cost it 9 MiB it has no use
    // for (docs/benchmarks.md, "Where the memory goes").
    const { startServer } = await import('./server.ts');
    // A worker leaves the migrations to the primary, which ran them before forking.
    const server = await startServer(config, logger, { migrate: !cluster.isWorker });
    logger.info({ url: server.url }, 'clubhouse is serving');
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'stopping: draining in-flight requests');
      const force = setTimeout(() => {
        logger.error('grace period over, exiting with requests still open');
        process.exit(1);
      }, config.shutdownGraceMs);
      force.unref();
      server.close().then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'error while stopping');
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  } catch (err) {
    process.stderr.write(`clubhouse: cannot start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
