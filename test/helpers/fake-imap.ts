// Misbehaving IMAP servers for fault tests: one that never greets, one that resets the connection
// during authentication, one that offers no STARTTLS, and a scripted TLS one that records what the
// client sent. Each counts its open sockets so tests can prove nothing is left open.

import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { readLines } from './lines.ts';
import { socketTracker } from './socket-tracker.ts';

export type FakeMode =
  /** Accepts and never says a word. */
  | 'silent'
  /** Greets and answers CAPABILITY, then resets the connection when authentication starts. */
  | 'reset-on-auth'
  /** Greets without STARTTLS and refuses every login; records what it was sent. */
  | 'no-starttls'
  /** Greets, answers CAPABILITY and ID (recording it), and refuses the login. */
  | 'record';

export interface FakeImap {
  readonly port: number;
  /** Everything clients sent, as text. */
  readonly received: string[];
  /** Sockets accepted so far. */
  readonly accepted: number;
  /** Sockets still open on the server side. */
  openSockets(): number;
  /** Resolves once every server-side socket has closed (or rejects after `timeoutMs`). */
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const CAPABILITIES = 'IMAP4rev1 ID AUTH=PLAIN';

function script(socket: Socket, mode: FakeMode, received: string[]): void {
  let awaitingSasl: string | null = null;
  socket.on('data', (chunk: Buffer) => received.push(chunk.toString('utf8')));
  // Lines only, no literals (the fakes offer AUTH=PLAIN): node's readline (helpers/lines.ts).
  readLines(socket, (line) => {
    // A reset ends the conversation: lines that came with it are not answered.
    if (socket.destroyed) return;
    if (awaitingSasl !== null) {
      socket.write(`${awaitingSasl} NO [AUTHENTICATIONFAILED] Authentication failed.\r\n`);
      awaitingSasl = null;
      return;
    }
    const [tag = '*', verb = ''] = line.split(' ');
    const upper = verb.toUpperCase();
    if (upper === 'CAPABILITY') {
      socket.write(
        `* CAPABILITY ${mode === 'no-starttls' ? 'IMAP4rev1 AUTH=PLAIN' : CAPABILITIES}\r\n${tag} OK done\r\n`,
      );
    } else if (upper === 'ID') {
      socket.write(`* ID NIL\r\n${tag} OK done\r\n`);
    } else if (upper === 'AUTHENTICATE' || upper === 'LOGIN') {
      if (mode === 'reset-on-auth') {
        socket.resetAndDestroy();
        return;
      }
      if (upper === 'AUTHENTICATE' && line.split(' ').length === 3) {
        awaitingSasl = tag;
        socket.write('+ \r\n');
      } else {
        socket.write(`${tag} NO [AUTHENTICATIONFAILED] Authentication failed.\r\n`);
      }
    } else if (upper === 'LOGOUT') {
      socket.end(`* BYE bye\r\n${tag} OK done\r\n`);
    } else {
      socket.write(`${tag} BAD unknown\r\n`);
    }
  });
}

/** Starts a fake IMAP server on a free loopback port; `tls` gives it the harness certificate. */
export async function startFakeImap(
  mode: FakeMode,
  tls?: { certFile: string; keyFile: string },
): Promise<FakeImap> {
  const received: string[] = [];
  const tracker = socketTracker();
  const onSocket = (socket: Socket) => {
    tracker.add(socket);
    if (mode === 'silent') return;
    socket.write(
      `* OK [CAPABILITY ${mode === 'no-starttls' ? 'IMAP4rev1 AUTH=PLAIN' : CAPABILITIES}] fake ready\r\n`,
    );
    script(socket, mode, received);
  };
  const server: Server =
    tls === undefined
      ? createServer(onSocket)
      : createTlsServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, onSocket);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return Object.assign(tracker.tracking(server), { port, received });
}
