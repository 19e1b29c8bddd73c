// The ceiling for any Node endpoint here: the fastest correct node:http answer. It sends
// clubhouse's own answers, recorded at start (answers.ts): the same status, headers and body,
// prepared once as a flat header array and a Buffer, chosen by the path alone (and, for check,
// whether a cookie came). HTTP/1.1 with keep-alive, Date and Content-Length as node:http writes
// them; HEAD gets no body, other methods 405. WORKERS > 1 forks node:cluster workers, as clubhouse
// scales.
// Usage: node bench/machinery/baseline.ts PORT ANSWERS.json [WORKERS]
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { Answer, Answers } from './answers.ts';

const port = Number(process.argv[2]);
const file = process.argv[3];
const workers = Number(process.argv[4] ?? '1');

if (!Number.isInteger(port) || port <= 0 || file === undefined || !Number.isInteger(workers)) {
  process.stderr.write('usage: baseline.ts PORT ANSWERS.json [WORKERS]\n');
  process.exit(2);
}

interface Prepared {
  readonly status: number;
  readonly headers: string[];
  readonly body: Buffer;
}

function prepare(answer: Answer): Prepared {
  const body = Buffer.from(answer.body, 'utf8');
  const headers = [...answer.headers];
  const length = headers.findIndex((name, i) => i % 2 === 0 && name.toLowerCase() === 'content-length');
  if (length >= 0) headers[length + 1] = String(body.length);
  else headers.push('content-length', String(body.length));
  return { status: answer.status, headers, body };
}

function serve(answers: Answers): void {
  const CHECK = prepare(answers.check);
  const ANONYMOUS = prepare(answers['check-anonymous']);
  const LIST = prepare(answers['group-list']);
  const DETAIL = prepare(answers['group-detail']);
  const NOT_FOUND = prepare(answers['not-found']);
  const NOT_ALLOWED = prepare({
    status: 405,
    headers: NOT_FOUND.headers,
    body: '{"detail":"Method not allowed."}',
  });

  const server = http.createServer((request, response) => {
    const url = request.url ?? '';
    let answer: Prepared;
    if (request.method !== 'GET' && request.method !== 'HEAD') answer = NOT_ALLOWED;
    else if (url === '/api/auth/check') answer = request.headers.cookie === undefined ? ANONYMOUS : CHECK;
    else if (url === '/api/group/') answer = LIST;
    else if (url.startsWith('/api/group/')) answer = DETAIL;
    else answer = NOT_FOUND;
    response.writeHead(answer.status, answer.headers);
    // node:http leaves the body out for HEAD by itself.
    response.end(answer.body);
  });
  // clubhouse's KEEP_ALIVE_TIMEOUT_MS default, so both keep connections alike.
  server.keepAliveTimeout = 72_000;
  server.listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
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
  serve(JSON.parse(readFileSync(file, 'utf8')) as Answers);
}
