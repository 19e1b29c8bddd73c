// Prometheus metrics (contract §6: GET /metrics) with prom-client, one registry for the process.
// Each part of the service records through a view of its own, no wider than what it records: the
// HTTP edge (requests.ts), the login routes (logins.ts), the passkey routes (passkeys.ts), the
// backends (backends.ts), the group sync (group-sync.ts). Here: the registry they share, Node's process metrics, the live-sessions gauge,
// and the exposition (under WORKERS the cluster's sum, cluster.ts).
import cluster from 'node:cluster';
import { createRequire } from 'node:module';
import client from 'prom-client';
import type { GuardStats } from '../backends/authenticator.ts';
import { type BackendMetrics, backendMetrics, guardGauges } from './backends.ts';
import { askPrimaryForMetrics } from './cluster.ts';
import { type GroupSyncMetrics, groupSyncMetrics } from './group-sync.ts';
import { type LoginMetrics, loginMetrics } from './logins.ts';
import { type PasskeyMetrics, passkeyMetrics } from './passkeys.ts';
import { type RequestMetrics, requestMetrics } from './requests.ts';

/** What /metrics serves (routes/ops.ts, and METRICS_PORT's listener). */
export interface MetricsExposition {
  /** The exposition for a scrape: this process's, or under WORKERS the sum over every worker. */
  text(): Promise<string>;
  readonly contentType: string;
}

/** Every view, for the composition root, which hands each part its own. */
export interface Metrics
  extends RequestMetrics,
    LoginMetrics,
    PasskeyMetrics,
    BackendMetrics,
    GroupSyncMetrics,
    MetricsExposition {
  /** Wires the gauges that are read at scrape time. */
  setSources(sources: MetricSources): void;
}

/** What the gauges read at scrape time. */
interface MetricSources {
  /** The backends' guard (the chain's worst breaker, its attempts running and waiting). */
  readonly guard: { stats(): GuardStats };
  /** The session store, counted at most once per SESSIONS_GAUGE_TTL_MS... */
  readonly sessions: { countActive(now: number): Promise<number> };
  /** ...on the sessions' clock (ms since the epoch). */
  readonly now: () => number;
}

/** The active-sessions gauge counts rows; at a million sessions that is worth caching. */
const SESSIONS_GAUGE_TTL_MS = 15_000;

/**
 * prom-client's default metrics (process, heap, event loop, handles, version) but one: the
 * nodejs_gc_duration_seconds histogram's PerformanceObserver is called back after every collection,
 * which under load is every few hundred requests. Measured with it and without it (check
 * on the 1M-session database, 8 alternating rounds of 3 s): 32.2 against 28.6 µs of CPU per request
 * (no cookie 21.8 against 20.8) and 9–16 MiB more peak RSS. Pauses still show in the event-loop lag
 * metrics. collectDefaultMetrics cannot leave one out, so each of its metricsList is registered by
 * its own module (prom-client is pinned; test/ops/default-metrics.test.ts checks the result).
 */
const OMITTED_DEFAULT_METRICS: readonly string[] = ['gc'];
const promClientModule = createRequire(import.meta.url);

export function registerDefaultMetrics(registry: client.Registry): void {
  for (const name of client.collectDefaultMetrics.metricsList) {
    if (OMITTED_DEFAULT_METRICS.includes(name)) continue;
    const register = promClientModule(`prom-client/lib/metrics/${name}.js`) as (
      registry: client.Registry,
      config: { readonly eventLoopMonitoringPrecision: number },
    ) => void;
    // collectDefaultMetrics' own default precision.
    register(registry, { eventLoopMonitoringPrecision: 10 });
  }
}

/** A registry with every metric of the service, plus Node's process metrics. */
export function createMetrics(now: () => number = Date.now): Metrics {
  const registry = new client.Registry();
  registerDefaultMetrics(registry);
  const requests = requestMetrics(
    registry,
    { total: 'clubhouse_http_requests_total', duration: 'clubhouse_http_request_duration_seconds' },
    {
      total: 'HTTP requests answered, by method, route and status.',
      duration: 'Time to answer an HTTP request, by method, route and status.',
    },
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  const logins = loginMetrics(registry);
  const backends = backendMetrics(registry);
  const groupSync = groupSyncMetrics(registry);
  const passkeys = passkeyMetrics(registry);
  let sources: MetricSources | null = null;
  let sessionsCache: { at: number; value: number } | null = null;
  guardGauges(registry, () => sources?.guard.stats() ?? null);
  new client.Gauge({
    name: 'clubhouse_sessions_active',
    help: `Live sessions (refreshed at most every ${SESSIONS_GAUGE_TTL_MS / 1000} s).`,
    registers: [registry],
    async collect() {
      if (sources === null) return;
      if (sessionsCache === null || now() - sessionsCache.at >= SESSIONS_GAUGE_TTL_MS) {
        try {
          sessionsCache = { at: now(), value: await sources.sessions.countActive(sources.now()) };
        } catch {
          // A store outage must not break the scrape; the last value stands.
        }
      }
      if (sessionsCache !== null) this.set(sessionsCache.value);
    },
  });
  if (cluster.isWorker) {
    // prom-client's AggregatorRegistry in the primary collects from this registry over IPC; making
    // one here installs the worker's side of that exchange.
    client.AggregatorRegistry.setRegistries([registry]);
    new client.AggregatorRegistry();
  }
  return {
    text: () => (cluster.isWorker ? askPrimaryForMetrics() : registry.metrics()),
    contentType: registry.contentType,
    observeRequest: requests.observe,
    observeLogin: logins.observeLogin,
    observeAttempt: backends.observeAttempt,
    observeGroupSync: groupSync.observeGroupSync,
    observeRegistration: passkeys.observeRegistration,
    setSources(next) {
      sources = next;
    },
  };
}
