// Prometheus metrics (contract §6: GET /metrics) with prom-client: requests, logins, IMAP, sessions.
import cluster from 'node:cluster';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import client from 'prom-client';
import type { LoginFailure, VerifyResult } from '../backends/authenticator.ts';
import type { OidcFailure } from '../backends/oidc/settings.ts';
import type { GroupSyncOutcome } from '../groups/sync-run.ts';
import { API_ERRORS } from './api-errors.ts';
import { requestMetrics } from './request-metrics.ts';

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
  // contract §11. Under WORKERS the primary adds up every worker's series: counters sum, and the
  // two gauges take the largest (the latest success, the longest last run), not a sum.
  const syncRuns = new client.Counter({
    name: 'clubhouse_group_sync_runs_total',
    help: 'Group sync runs by outcome: success, failure, or busy (another run held the lock).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const syncChanges = new client.Counter({
    name: 'clubhouse_group_sync_changes_total',
    help: 'Rows the group sync wrote, by kind (group, membership, user) and change (added, changed, removed).',
    labelNames: ['kind', 'change'] as const,
    registers: [registry],
  });
  const syncLastSuccess = new client.Gauge({
    name: 'clubhouse_group_sync_last_success_timestamp_seconds',
    help: 'When the last successful group sync ended (Unix time); 0 before the first.',
    aggregator: 'max',
    registers: [registry],
  });
  const syncDuration = new client.Gauge({
    name: 'clubhouse_group_sync_duration_seconds',
    help: 'How long the last group sync run took (directory read, plan and write), whatever its outcome.',
    aggregator: 'max',
    registers: [registry],
  });
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
    observeGroupSync(outcome, at) {
      if (!outcome.ok) {
        syncRuns.inc({ outcome: outcome.stage === 'busy' ? 'busy' : 'failure' });
        if (outcome.stage !== 'busy') syncDuration.set(outcome.seconds);
        return;
      }
      syncRuns.inc({ outcome: 'success' });
      syncDuration.set(outcome.seconds);
      syncLastSuccess.set(at / 1000);
      const c = outcome.plan.counts;
      syncChanges.inc({ kind: 'group', change: 'added' }, c.groupsAdded);
      syncChanges.inc({ kind: 'group', change: 'changed' }, c.groupsChanged);
      syncChanges.inc({ kind: 'group', change: 'removed' }, c.groupsRemoved);
      syncChanges.inc({ kind: 'membership', change: 'added' }, c.membershipsAdded);
      syncChanges.inc({ kind: 'membership', change: 'changed' }, c.membershipsChanged);
      syncChanges.inc({ kind: 'membership', change: 'removed' }, c.membershipsRemoved);
      syncChanges.inc({ kind: 'user', change: 'added' }, c.usersCreated);
    },
    setSources(next) {
      sources = next;
    },
  };
}

const METRICS_REQUEST = 'clubhouse:metrics-request';
const METRICS_RESPONSE = 'clubhouse:metrics-response';
let nextRequest = 0;

/** In a worker: the whole cluster's metrics, summed by the primary (contract §6). */
function askPrimaryForMetrics(): Promise<string> {
  const id = ++nextRequest;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.off('message', onMessage);
      reject(new Error('the primary did not answer with the metrics'));
    }, 5000);
    const onMessage = (message: { type?: string; id?: number; text?: string; error?: string }) => {
      if (message?.type !== METRICS_RESPONSE || message.id !== id) return;
      clearTimeout(timer);
      process.off('message', onMessage);
      if (message.text === undefined) reject(new Error(message.error ?? 'no metrics'));
      else resolve(message.text);
    };
    process.on('message', onMessage);
    process.send?.({ type: METRICS_REQUEST, id });
  });
}

/** In the primary: answers the workers' requests for the summed metrics, and serves them itself. */
export function serveClusterMetrics(): { text(): Promise<string>; contentType: string } {
  const aggregator = new client.AggregatorRegistry();
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== METRICS_REQUEST) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_RESPONSE, id: message.id, text }),
      (err: unknown) => worker.send({ type: METRICS_RESPONSE, id: message.id, error: String(err) }),
    );
  });
  return { text: () => aggregator.clusterMetrics(), contentType: aggregator.contentType };
}

/**
 * Serves only /metrics on its own port (METRICS_PORT), so the scrape endpoint need not be public.
 * Anything else there is a 404.
 */
export async function serveMetrics(
  metrics: { text(): Promise<string>; contentType: string },
  host: string,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      response
        .writeHead(404, { 'content-type': 'application/json', 'x-content-type-options': 'nosniff' })
        .end(JSON.stringify({ detail: API_ERRORS.NOT_FOUND.detail }));
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () =>
        response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ detail: API_ERRORS.INTERNAL.detail })),
    );
  });
  server.listen(port, host);
  await once(server, 'listening');
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
