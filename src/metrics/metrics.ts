// Prometheus metrics (contract §6: GET /metrics) with prom-client: requests, logins, IMAP, sessions,
// and the group sync's (group-sync.ts); summed under WORKERS by cluster.ts.
import cluster from 'node:cluster';
import { createRequire } from 'node:module';
import client from 'prom-client';
import type { LoginFailure, VerifyResult } from '../backends/authenticator.ts';
import type { OidcFailure } from '../backends/oidc/settings.ts';
import type { GroupSyncOutcome } from '../groups/sync-run.ts';
import { askPrimaryForMetrics } from './cluster.ts';
import { groupSyncMetrics } from './group-sync.ts';
import { requestMetrics } from './requests.ts';

type LoginOutcomeLabel = 'success' | 'failure' | 'throttled';

export interface Metrics {
  readonly registry: client.Registry;
  /** The exposition for a scrape: this process's, or under WORKERS the sum over every worker. */
  text(): Promise<string>;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  /**
   * `backend`: the backend that decided (contract §8), '' when none did (throttled, refused input);
   * for a sign-in at an identity provider, the provider (§10), with its own failure classes.
   */
  observeLogin(
    outcome: LoginOutcomeLabel,
    failure: LoginFailure | OidcFailure | undefined,
    backend?: string,
  ): void;
  observeImap(result: VerifyResult, seconds: number): void;
  /** One attempt at any backend (IMAP and LDAP alike), by backend name and result. */
  observeBackend(backend: string, result: VerifyResult, seconds: number): void;
  /** One run of the group sync (contract §11): its outcome, duration and counts. */
  observeGroupSync(outcome: GroupSyncOutcome, at: number): void;
  /** Wires the gauges that are read at scrape time. */
  setSources(sources: MetricSources): void;
}

interface MetricSources {
  readonly imap: () => { active: number; queued: number; breaker: string };
  /** Live sessions; called at most once per SESSIONS_GAUGE_TTL_MS. */
  readonly activeSessions: () => Promise<number>;
}

/** The active-sessions gauge counts rows; at a million sessions that is worth caching. */
const SESSIONS_GAUGE_TTL_MS = 15_000;

const BREAKER_STATES: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

/**
 * prom-client's default metrics (process, heap, event loop, handles, version) but one: the
 * nodejs_gc_duration_seconds histogram's PerformanceObserver is called back after every collection,
 * which under load is every few hundred requests (issue 14). Measured with it and without it (check
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
  const logins = new client.Counter({
    name: 'clubhouse_login_attempts_total',
    help: 'Login attempts by outcome (success, failure, throttled), failure class and the backend that decided.',
    labelNames: ['outcome', 'failure', 'backend'] as const,
    registers: [registry],
  });
  const throttled = new client.Counter({
    name: 'clubhouse_login_throttled_total',
    help: 'Login attempts refused with 429 without contacting IMAP.',
    registers: [registry],
  });
  const imapLatency = new client.Histogram({
    name: 'clubhouse_imap_login_duration_seconds',
    help: 'Time of one IMAP login attempt (connect, TLS, greeting, authentication), by result.',
    labelNames: ['result'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const backendLatency = new client.Histogram({
    name: 'clubhouse_backend_login_duration_seconds',
    help: 'Time of one login attempt at an authentication backend (IMAP or LDAP), by backend and result.',
    labelNames: ['backend', 'result'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const observeGroupSync = groupSyncMetrics(registry);
  let sources: MetricSources | null = null;
  let sessionsCache: { at: number; value: number } | null = null;
  new client.Gauge({
    name: 'clubhouse_imap_in_flight',
    help: 'IMAP login attempts running now.',
    registers: [registry],
    collect() {
      if (sources !== null) this.set(sources.imap().active);
    },
  });
  new client.Gauge({
    name: 'clubhouse_imap_queue_length',
    help: 'IMAP login attempts waiting for a slot.',
    registers: [registry],
    collect() {
      if (sources !== null) this.set(sources.imap().queued);
    },
  });
  new client.Gauge({
    name: 'clubhouse_imap_circuit_state',
    help: 'IMAP circuit breaker: 0 closed, 1 half open, 2 open (failing fast).',
    registers: [registry],
    collect() {
      if (sources !== null) this.set(BREAKER_STATES[sources.imap().breaker] ?? 0);
    },
  });
  new client.Gauge({
    name: 'clubhouse_sessions_active',
    help: `Live sessions (refreshed at most every ${SESSIONS_GAUGE_TTL_MS / 1000} s).`,
    registers: [registry],
    async collect() {
      if (sources === null) return;
      if (sessionsCache === null || now() - sessionsCache.at >= SESSIONS_GAUGE_TTL_MS) {
        try {
          sessionsCache = { at: now(), value: await sources.activeSessions() };
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
    registry,
    text: () => (cluster.isWorker ? askPrimaryForMetrics() : registry.metrics()),
    observeRequest: requests.observe,
    observeLogin(outcome, failure, backend) {
      logins.inc({ outcome, failure: failure ?? '', backend: backend ?? '' });
      if (outcome === 'throttled') throttled.inc();
    },
    observeImap(result, seconds) {
      imapLatency.observe({ result: result.ok ? 'ok' : result.failure }, seconds);
    },
    observeBackend(backend, result, seconds) {
      backendLatency.observe({ backend, result: result.ok ? 'ok' : result.failure }, seconds);
    },
    observeGroupSync,
    setSources(next) {
      sources = next;
    },
  };
}
