// Readiness probe of the IMAP server without credentials (contract §5, §6): connect, TLS with
// verification, greeting, CAPABILITY (after STARTTLS when required), and login not disabled.
// Hand-written because imapflow cannot stop short of authenticating; it speaks only CAPABILITY,
// STARTTLS and LOGOUT.
import { connect as netConnect, type Socket } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { classifyImapError, type ImapSettings, type ImapTlsOptions } from './imap.ts';

export type ProbeResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Reads CRLF-terminated lines from a socket; rejects when it closes or errs. */
class LineReader {
  #buffer = '';
  #waiting: ((line: string) => void) | null = null;
  #lines: string[] = [];
  #failure: Error | null = null;
  #onFail: ((err: Error) => void) | null = null;

  attach(socket: Socket | TLSSocket): void {
    this.#buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      let index = this.#buffer.indexOf('\r\n');
      while (index >= 0) {
        this.#lines.push(this.#buffer.slice(0, index));
        this.#buffer = this.#buffer.slice(index + 2);
        index = this.#buffer.indexOf('\r\n');
      }
      // A server that never ends a line must not make the probe hold memory without bound.
      if (this.#buffer.length > 65_536) this.fail(new Error('IMAP line too long'));
      this.#flush();
    });
  }

  fail(err: Error): void {
    this.#failure ??= err;
    this.#onFail?.(err);
  }

  next(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.#waiting = resolve;
      this.#onFail = reject;
      if (this.#failure !== null) reject(this.#failure);
      this.#flush();
    });
  }

  #flush(): void {
    const line = this.#lines.shift();
    if (line === undefined || this.#waiting === null) {
      if (line !== undefined) this.#lines.unshift(line);
      return;
    }
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting(line);
  }
}

function waitForConnect(socket: Socket | TLSSocket, secure: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once(secure ? 'secureConnect' : 'connect', () => resolve());
    socket.once('error', reject);
  });
}

/** Sends a tagged command and collects its untagged lines until the tagged answer. */
async function command(
  socket: Socket | TLSSocket,
  reader: LineReader,
  tag: string,
  text: string,
): Promise<{ status: string; lines: string[] }> {
  socket.write(`${tag} ${text}\r\n`);
  const lines: string[] = [];
  for (;;) {
    const line = await reader.next();
    if (line.startsWith(`${tag} `)) return { status: line.slice(tag.length + 1), lines };
    lines.push(line);
  }
}

function capabilities(lines: string[]): Set<string> {
  const found = new Set<string>();
  for (const line of lines) {
    const match = /^\* (?:OK \[)?CAPABILITY ([^\]]*)/i.exec(line);
    for (const cap of match?.[1]?.split(' ') ?? []) found.add(cap.toUpperCase());
  }
  return found;
}

/** Probes the IMAP server once within `settings.timeoutMs`; the connection is always closed. */
export async function probeImap(settings: ImapSettings, tls: ImapTlsOptions): Promise<ProbeResult> {
  let socket: Socket | TLSSocket | null = null;
  let timer: NodeJS.Timeout | undefined;
  const reader = new LineReader();
  const run = async (): Promise<ProbeResult> => {
    const secure = settings.security === 'tls';
    socket = secure
      ? tlsConnect({ host: settings.host, port: settings.port, ...tls })
      : netConnect({ host: settings.host, port: settings.port });
    socket.on('error', (err) => reader.fail(err));
    socket.on('close', () => reader.fail(new Error('connection closed')));
    reader.attach(socket);
    await waitForConnect(socket, secure);
    const greeting = await reader.next();
    if (!/^\* (OK|PREAUTH)/i.test(greeting))
      return { ok: false, reason: `unexpected greeting: ${greeting.slice(0, 80)}` };
    let caps = (await command(socket, reader, 'p1', 'CAPABILITY')).lines;
    if (settings.security === 'starttls') {
      if (!capabilities(caps).has('STARTTLS')) return { ok: false, reason: 'STARTTLS not offered' };
      const answer = await command(socket, reader, 'p2', 'STARTTLS');
      if (!/^OK/i.test(answer.status))
        return { ok: false, reason: `STARTTLS refused: ${answer.status.slice(0, 80)}` };
      const plain: Socket = socket;
      plain.removeAllListeners('data');
      socket = tlsConnect({ socket: plain, ...tls });
      socket.on('error', (err) => reader.fail(err));
      reader.attach(socket);
      await waitForConnect(socket, true);
      // RFC 9051 §6.2.1: capabilities learned before TLS are discarded.
      caps = (await command(socket, reader, 'p3', 'CAPABILITY')).lines;
    }
    const found = capabilities(caps);
    if (found.has('LOGINDISABLED')) return { ok: false, reason: 'LOGINDISABLED' };
    await command(socket, reader, 'p4', 'LOGOUT').catch(() => undefined);
    return { ok: true };
  };
  try {
    const deadline = new Promise<ProbeResult>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, reason: `no answer within ${settings.timeoutMs} ms` }),
        settings.timeoutMs,
      );
    });
    return await Promise.race([
      run().catch((err: unknown): ProbeResult => {
        const { failure, reason } = classifyImapError(err);
        return { ok: false, reason: `${failure}: ${reason}` };
      }),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
    (socket as Socket | TLSSocket | null)?.destroy();
  }
}

/**
 * A probe cached for `ttlMs` and shared by concurrent callers, so readiness checks cannot hammer
 * the mail server (20 probes in 2 s open at most a handful of connections).
 */
export function cachedProbe(probe: () => Promise<ProbeResult>, ttlMs: number, now: () => number = Date.now) {
  let last: { at: number; result: ProbeResult } | null = null;
  let running: Promise<ProbeResult> | null = null;
  let connections = 0;
  return {
    get connections() {
      return connections;
    },
    check(): Promise<ProbeResult> {
      if (last !== null && now() - last.at < ttlMs) return Promise.resolve(last.result);
      if (running !== null) return running;
      connections++;
      running = probe()
        .then((result) => {
          last = { at: now(), result };
          return result;
        })
        .finally(() => {
          running = null;
        });
      return running;
    },
  };
}
