// The ceiling for any Node endpoint here: bare node:http answering every GET with 200 `"alice"` and
// the headers clubhouse sends on /api/auth/check. `WORKERS=N` forks N node:cluster workers, the
// same way clubhouse scales out. Usage: node bench/baseline.ts PORT

import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import http from 'node:http';

const port = Number(process.argv[2]);
const workers = Number(process.env['WORKERS'] ?? '1');
const BODY = JSON.stringify('alice');

if (!Number.isInteger(port) || port <= 0) {
  process.stderr.write('usage: baseline.ts PORT\n');
  process.exit(2);
}

if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  // A worker that dies would leave a lopsided figure: stop rather than limp on.
  cluster.on('exit', () => process.exit(1));
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  const server = http.createServer((request, response) => {
    response.writeHead(request.method === 'GET' ? 200 : 405, {
      'x-frame-options': 'SAMEORIGIN',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'same-origin',
      'cross-origin-opener-policy': 'same-origin',
      'cache-control': 'no-store',
      'x-request-id': randomUUID(),
      allow: 'GET, HEAD, OPTIONS',
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(BODY),
    });
    response.end(BODY);
  });
  // Fastify's default, so both keep connections alike.
  server.keepAliveTimeout = 72_000;
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}
