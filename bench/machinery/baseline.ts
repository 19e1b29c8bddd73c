// The ceiling for any Node endpoint here: the fastest correct node:http answer. It sends
// clubhouse's own answers, recorded at start (answers.ts): the same status, headers and body,
// prepared once as a flat header array and a Buffer, chosen by the path alone (and, for check,
// whether a cookie came). HTTP/1.1 with keep-alive, Date and Content-Length as node:http writes
// them; HEAD gets no body, other methods 405. WORKERS > 1 forks node:cluster workers, as clubhouse
// scales.
// With SESSION_ANSWERS.json (answers.ts, recordSessionAnswers), a correct server for the load
// instead, as direct as node:http allows: each session's own answers, found by its cookie in a Map
// (check, the list, and the detail of each of its user's groups), with the same recorded headers. It
// reads from a working set as large as clubhouse's (10 000 users' lists), where the replay sends one
// answer from the processor's caches: what serving every user their own bytes costs a server here.
// Usage: node bench/machinery/baseline.ts PORT ANSWERS.json [WORKERS] [SESSION_ANSWERS.json]
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { Answer, Answers, SessionAnswers } from './answers.ts';

const port = Number(process.argv[2]);
const file = process.argv[3];
const workers = Number(process.argv[4] ?? '1');
const sessionFile = process.argv[5];

if (!Number.isInteger(port) || port <= 0 || file === undefined || !Number.isInteger(workers)) {
  process.stderr.write('usage: baseline.ts PORT ANSWERS.json [WORKERS] [SESSION_ANSWERS.json]\n');
  process.exit(2);
}

interface Prepared {
  readonly status: number;
  readonly headers: string[];
  readonly body: Buffer;
}

function withLength(recorded: readonly string[], length: number): string[] {
  const headers = [...recorded];
  const at = headers.findIndex((name, i) => i % 2 === 0 && name.toLowerCase() === 'content-length');
  if (at >= 0) headers[at + 1] = String(length);
  else headers.push('content-length', String(length));
  return headers;
}

function prepare(answer: Answer): Prepared {
  const body = Buffer.from(answer.body, 'utf8');
  return { status: answer.status, headers: withLength(answer.headers, body.length), body };
}

/** `answer`'s status and headers with other bodies: one header list per body length. */
function withBodies(answer: Prepared): (body: string) => Prepared {
  const byLength = new Map<number, string[]>();
  return (text) => {
    const body = Buffer.from(text, 'utf8');
    let headers = byLength.get(body.length);
    if (headers === undefined) {
      headers = withLength(answer.headers, body.length);
      byLength.set(body.length, headers);
    }
    return { status: answer.status, headers, body };
  };
}

interface Own {
  readonly check: Prepared;
  readonly list: Prepared;
  readonly details: Map<string, Prepared>;
}

/** The session cookie's value in a Cookie header (RFC 6265: pairs separated by "; "). */
function sessionOf(cookie: string): string | undefined {
  for (const pair of cookie.split('; ')) if (pair.startsWith('sessionid=')) return pair.slice(10);
  return undefined;
}

function serve(answers: Answers, sessions: SessionAnswers | null): void {
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

  let own: Map<string, Own> | null = null;
  if (sessions !== null) {
    const [check, list, detail] = [withBodies(CHECK), withBodies(LIST), withBodies(DETAIL)];
    own = new Map();
    for (const [id, bodies] of Object.entries(sessions)) {
      const details = new Map(Object.entries(bodies.details).map(([group, body]) => [group, detail(body)]));
      own.set(id, { check: check(bodies.check), list: list(bodies.list), details });
    }
  }
  // The replay: chosen by the path alone (and, for check, whether a cookie came).
  const replay = (request: http.IncomingMessage, response: http.ServerResponse) => {
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
  };
  // Each session's own answers; a session not recorded is nobody (the load sends none).
  const ownAnswer = (mine: Own | undefined, url: string): Prepared => {
    if (url === '/api/auth/check') return mine?.check ?? ANONYMOUS;
    if (url === '/api/group/') return mine?.list ?? NOT_FOUND;
    if (url.startsWith('/api/group/')) return mine?.details.get(url.slice('/api/group/'.length)) ?? NOT_FOUND;
    return NOT_FOUND;
  };
  const perSession =
    (bySession: Map<string, Own>) => (request: http.IncomingMessage, response: http.ServerResponse) => {
      const { cookie } = request.headers;
      const answer =
        request.method !== 'GET' && request.method !== 'HEAD'
          ? NOT_ALLOWED
          : ownAnswer(
              cookie === undefined ? undefined : bySession.get(sessionOf(cookie) ?? ''),
              request.url ?? '',
            );
      response.writeHead(answer.status, answer.headers);
      response.end(answer.body);
    };
  const server = http.createServer(own === null ? replay : perSession(own));
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
  serve(
    JSON.parse(readFileSync(file, 'utf8')) as Answers,
    sessionFile === undefined ? null : (JSON.parse(readFileSync(sessionFile, 'utf8')) as SessionAnswers),
  );
}
