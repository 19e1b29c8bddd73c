// Serving the metrics (contract §6: GET /metrics): under WORKERS a worker asks the primary for the
// whole cluster's sum over IPC; the primary answers them and serves the sum itself; METRICS_PORT
// serves only /metrics on a port of its own. The metrics themselves are metrics.ts's.
import cluster from 'node:cluster';
import { once } from 'node:events';
import { createServer } from 'node:http';
import client from 'prom-client';
import { API_ERRORS } from './api-errors.ts';

const METRICS_REQUEST = 'clubhouse:metrics-request';
const METRICS_RESPONSE = 'clubhouse:metrics-response';
let nextRequest = 0;

/** In a worker: the whole cluster's metrics, summed by the primary (contract §6). */
export function askPrimaryForMetrics(): Promise<string> {
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
