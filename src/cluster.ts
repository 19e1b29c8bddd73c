// WORKERS=N (contract §6): N processes serve one port through node:cluster. The primary applies
// the migrations once, forks the workers (each runs the ordinary server, see serve.ts), replaces a
// worker that dies unexpectedly, and on SIGTERM/SIGINT asks every worker to drain, exiting 0 once
// all have. Works on every store: workers share nothing but the database (and Redis).
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { migrateUsernamesAtStart } from './auth/username-migration.ts';
import type { Config } from './config/config.ts';
import { serveMetrics } from './http/metrics-port.ts';
import { serveClusterMetrics } from './metrics/cluster.ts';
import { migrateStores, openStores } from './store/open.ts';

// A worker that dies sooner than this after starting is crash-looping: its replacement waits,
// twice as long each time (up to MAX_RESTART_DELAY_MS), so a broken database is not hammered.
const STABLE_AFTER_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;
// After the grace period the workers' own timers have forced them out; this is the backstop.
const KILL_MARGIN_MS = 5000;

/**
 * Runs the primary until it is told to stop; resolves with the process exit code: 0 when every
 * worker drained and exited 0, 1 when start-up failed or a worker had to be killed.
 */
export async function runPrimary(config: Config, logger: Logger): Promise<number> {
  try {
    // Once, before any worker opens the database (workers open it with migrate: false).
    const options = config.store;
    const applied = await migrateStores(options);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    // contract §3: the stored usernames too, where the session store is open to end their sessions.
    const stores = await openStores(options, { migrate: false });
    try {
      await migrateUsernamesAtStart(stores, config.usernameCase, (fields, line) => logger.warn(fields, line));
    } finally {
      await stores.close();
    }
  } catch (err) {
    logger.error({ err }, 'cannot migrate the database');
    return 1;
  }

  const startedAt = new Map<Worker, number>();
  const listening = new Set<Worker>();
  let everListened = false;
  let stopping = false;
  let failedStop = false;
  let restartDelayMs = 0;
  const timers = new Set<NodeJS.Timeout>();
  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    finish = resolve;
  });

  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
  };

  cluster.on('listening', (worker, address) => {
    listening.add(worker);
    everListened = true;
    logger.info({ workerPid: worker.process.pid, port: address.port }, 'worker serving');
  });

  // contract §6: /metrics adds up all workers. A worker asked for /metrics asks the primary, which
  // sums every worker's registry with prom-client's AggregatorRegistry; METRICS_PORT is served here.
  const clusterMetrics = serveClusterMetrics();
  const metricsServer =
    config.metricsPort === null ? null : await serveMetrics(clusterMetrics, config.host, config.metricsPort);

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    const wasListening = listening.delete(worker);
    startedAt.delete(worker);
    const workerPid = worker.process.pid;
    if (stopping) {
      // Killed by our SIGTERM before it had installed its handler (still starting): nothing was lost.
      if (code !== 0 && signal !== 'SIGTERM') failedStop = true;
      logger.info({ workerPid, code, signal }, 'worker stopped');
      if (startedAt.size === 0) finish(failedStop ? 1 : 0);
      return;
    }
    if (!everListened) {
      // No worker ever served: a setting or the port is wrong, and restarting would not help.
      logger.error({ workerPid, code, signal }, 'worker failed to start; stopping');
      void stopAll(1);
      return;
    }
    restartDelayMs =
      lived < STABLE_AFTER_MS ? Math.min(Math.max(restartDelayMs * 2, 500), MAX_RESTART_DELAY_MS) : 0;
    logger.error(
      { workerPid, code, signal, wasListening, restartInMs: restartDelayMs },
      'worker died unexpectedly; replacing it',
    );
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopping) fork();
    }, restartDelayMs);
    timers.add(timer);
  });

  const stopAll = (code: number) => {
    if (stopping) return;
    stopping = true;
    if (code !== 0) failedStop = true;
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    void metricsServer?.close();
    if (startedAt.size === 0) {
      finish(failedStop ? 1 : 0);
      return;
    }
    // A worker treats SIGTERM as a single process does (serve.ts): stop accepting, finish what is
    // in flight, close the stores, exit 0.
    for (const worker of startedAt.keys()) worker.process.kill('SIGTERM');
    const force = setTimeout(() => {
      logger.error('workers did not stop in time; killing them');
      failedStop = true;
      for (const worker of startedAt.keys()) worker.process.kill('SIGKILL');
    }, config.shutdownGraceMs + KILL_MARGIN_MS);
    force.unref();
  };

  const onSignal = (signal: NodeJS.Signals) => {
    logger.info({ signal }, 'stopping: draining every worker');
    stopAll(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  logger.info({ workers: config.workers }, 'starting workers');
  for (let i = 0; i < config.workers; i++) fork();
  return done;
}
