// METRICS_PORT (contract §6): only /metrics, on a port of its own, so that the scrape endpoint need
// not be public. What it serves is handed in (metrics/metrics.ts's text, or the cluster's sum).
import { once } from 'node:events';
import { API_ERRORS } from './api-errors.ts';
import { createServer } from './node-http.ts';

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
