// The authentication backends' metrics (contract §5, §8): how long each attempt at a backend took,
// by backend and result (IMAP's also under their own name, the older series), and the guard's
// gauges (attempts running, waiting, the circuit breaker), read at scrape time.
import client from 'prom-client';
import type { BackendKind, GuardStats, VerifyResult } from '../backends/authenticator.ts';

/** The backends' view of the metrics (wired to backends/build.ts's observer): one attempt. */
export interface BackendMetrics {
  /** One attempt that reached `backend`'s server: its result and how long it took. */
  observeAttempt(
    backend: { readonly name: string; readonly kind: BackendKind },
    result: VerifyResult,
    seconds: number,
  ): void;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const resultLabel = (result: VerifyResult) => (result.ok ? 'ok' : result.failure);

/** Registers the attempt histograms in `registry`. */
export function backendMetrics(registry: client.Registry): BackendMetrics {
  const imapLatency = new client.Histogram({
    name: 'clubhouse_imap_login_duration_seconds',
    help: 'Time of one IMAP login attempt (connect, TLS, greeting, authentication), by result.',
    labelNames: ['result'] as const,
    buckets: BUCKETS,
    registers: [registry],
  });
  const backendLatency = new client.Histogram({
    name: 'clubhouse_backend_login_duration_seconds',
    help: 'Time of one login attempt at an authentication backend (IMAP or LDAP), by backend and result.',
    labelNames: ['backend', 'result'] as const,
    buckets: BUCKETS,
    registers: [registry],
  });
  return {
    observeAttempt(backend, result, seconds) {
      if (backend.kind === 'imap') imapLatency.observe({ result: resultLabel(result) }, seconds);
      backendLatency.observe({ backend: backend.name, result: resultLabel(result) }, seconds);
    },
  };
}

const BREAKER_STATES: Record<string, number> = { closed: 0, half_open: 1, open: 2 };

/** The guard's gauges: name, help, and the value read off the guard's stats at each scrape. */
const GUARD_GAUGES: readonly { name: string; help: string; value: (stats: GuardStats) => number }[] = [
  { name: 'clubhouse_imap_in_flight', help: 'IMAP login attempts running now.', value: (s) => s.active },
  {
    name: 'clubhouse_imap_queue_length',
    help: 'IMAP login attempts waiting for a slot.',
    value: (s) => s.queued,
  },
  {
    name: 'clubhouse_imap_circuit_state',
    help: 'IMAP circuit breaker: 0 closed, 1 half open, 2 open (failing fast).',
    value: (s) => BREAKER_STATES[s.breaker] ?? 0,
  },
];

/** Registers the guard's gauges in `registry`; `stats` is read at each scrape (null: not wired yet). */
export function guardGauges(registry: client.Registry, stats: () => GuardStats | null): void {
  for (const gauge of GUARD_GAUGES) {
    new client.Gauge({
      name: gauge.name,
      help: gauge.help,
      registers: [registry],
      collect() {
        const now = stats();
        if (now !== null) this.set(gauge.value(now));
      },
    });
  }
}
