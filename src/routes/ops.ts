// Operating it (contract §6): /healthz (process up), /readyz (stores and backends reachable), /metrics,
// and /api/schema (the OpenAPI document of the route schemas).
import type { FastifyInstance } from 'fastify';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import { HIDDEN } from '../http/openapi.ts';
import type { MetricsExposition } from '../metrics/metrics.ts';
import { StoreMisconfiguredError, StoreUnavailableError } from '../store/errors.ts';
import type { Stores } from '../store/types.ts';

export interface OpsDeps {
  readonly stores: Pick<Stores, 'ping' | 'tls'>;
  /**
   * The readiness of every backend and identity provider by name (contract §8, §10): "ok" or why
   * not, probed without credentials; each part answers for its own names, in this order.
   */
  readonly parts: readonly (() => Promise<Record<string, string>>)[];
  /** Null when /metrics is served on METRICS_PORT instead. */
  readonly metrics: MetricsExposition | null;
}

/** Seconds a load balancer is told to wait before asking /readyz again. */
const READY_RETRY_AFTER_SECONDS = 5;

/** What each part answers, the stores first: "ok" or why not. */
async function readiness(deps: Pick<OpsDeps, 'stores' | 'parts'>): Promise<Record<string, string>> {
  const stores = deps.stores.ping().then(
    () => 'ok',
    (err: unknown) => {
      if (err instanceof StoreUnavailableError) return `${err.store} unavailable`;
      // Answers, but would lose what the service keeps (a Redis that evicts sessions).
      if (err instanceof StoreMisconfiguredError) return err.message;
      return 'unavailable';
    },
  );
  const [store, ...parts] = await Promise.all([stores, ...deps.parts.map((part) => part())]);
  return Object.assign({ stores: store }, ...parts);
}

/** Registers /healthz, /readyz and (unless on its own port) /metrics. */
export function registerOps(fastify: FastifyInstance, deps: OpsDeps): void {
  fastify.get('/healthz', (_request, reply) => sendJson(reply, 200, '{"status":"ok"}'));
  fastify.get('/readyz', async (_request, reply) => {
    const checks = await readiness(deps);
    // How each store is reached (verified TLS or not), beside whether it answers (docs/operations.md).
    const tls = deps.stores.tls;
    const failing = Object.entries(checks)
      .filter(([, state]) => state !== 'ok')
      .map(([part]) => part);
    if (failing.length === 0) return sendJson(reply, 200, JSON.stringify({ status: 'ready', checks, tls }));
    reply.header('retry-after', String(READY_RETRY_AFTER_SECONDS));
    return sendJson(reply, 503, JSON.stringify({ status: 'unavailable', failing, checks, tls }));
  });
  const { metrics } = deps;
  if (metrics !== null) {
    fastify.get('/metrics', async (_request, reply) =>
      reply.type(metrics.contentType).send(await metrics.text()),
    );
  }
}

/** GET /api/schema: what @fastify/swagger made of the route schemas (registered before every route). */
export function registerSchemaRoute(app: FastifyInstance, endpoint: DeclareEndpoint): void {
  endpoint({ url: '/api/schema', name: 'Schema' }, (routes) =>
    routes.get({ schema: HIDDEN }, (_request, reply) => sendJson(reply, 200, JSON.stringify(app.swagger()))),
  );
}
