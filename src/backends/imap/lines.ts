// Reads an IMAP server's responses off a socket, one at a time, with every bound the login needs
// (contract §5): a line longer than MAX_LINE_BYTES or a literal longer than MAX_LITERAL_BYTES is out
// of protocol, and so is anything after the socket errs or closes. Hand-written: the login reads
// a handful of short lines, and the IMAP parsers on npm are mail-client parsers (imapflow's pulls in
// charset tables worth ~33 MiB) that do not bound what a hostile server sends. Also here: the
// errors that end an attempt and their failure classes.
import type { Socket } from 'node:net';
import type { BackendFailure } from '../authenticator.ts';
import { tlsFailure } from '../tls.ts';

/** RFC 9051 §4 does not bound a line; 8 KiB holds any greeting, CAPABILITY or login answer. */
export const MAX_LINE_BYTES = 8192;
/** A literal in a server answer (`{n}`) is never needed for a login; a small one is skipped. */
const MAX_LITERAL_BYTES = 8192;
/** Responses received and not yet read: a login reads a few; a flood is out of protocol. */
const MAX_QUEUED_RESPONSES = 256;

/** The server broke the protocol (or a bound): `upstream_misconfigured`, never a success. */
export class ImapProtocolError extends Error {
  override readonly name = 'ImapProtocolError';
}

/** The server said `* BYE` or closed the connection: `upstream_unavailable`. */
export class ImapClosedError extends Error {
  override readonly name = 'ImapClosedError';
}

/** One server response, parsed as far as a login needs. */
export type ImapResponse =
  | { readonly kind: 'continuation'; readonly text: string }
  | { readonly kind: 'untagged'; readonly text: string }
  | { readonly kind: 'tagged'; readonly tag: string; readonly text: string };

const LITERAL_AT_END = /\{([0-9]+)\}$/;

/** Classifies a complete response line (RFC 9051 §2.2.2). */
function parseResponse(line: string): ImapResponse {
  if (line === '+' || line.startsWith('+ ')) return { kind: 'continuation', text: line.slice(2) };
  if (line.startsWith('* ')) return { kind: 'untagged', text: line.slice(2) };
  const space = line.indexOf(' ');
  // RFC 9051 §9: tag = 1*<any ASTRING-CHAR except "+">.
  if (
    space <= 0 ||
    !/^[\x21-\x7e]+$/.test(line.slice(0, space)) ||
    /[+(){%*"\\\]]/.test(line.slice(0, space))
  ) {
    throw new ImapProtocolError(`not an IMAP response: ${line.slice(0, 60)}`);
  }
  return { kind: 'tagged', tag: line.slice(0, space), text: line.slice(space + 1) };
}

/**
 * A bounded reader of CRLF-terminated responses. `attach` it to a socket (again after STARTTLS);
 * `next()` resolves with the next complete response or rejects once the connection failed.
 */
export class ResponseReader {
  #socket: Socket | null = null;
  #buffer: Buffer = Buffer.alloc(0);
  /** The text of a response whose literal is being read, and the literal's remaining bytes. */
  #partial = '';
  #literal = 0;
  #ready: string[] = [];
  #failure: Error | null = null;
  #waiter: { resolve: (r: ImapResponse) => void; reject: (e: Error) => void } | null = null;
  readonly #onData = (chunk: Buffer): void => this.#receive(chunk);

  attach(socket: Socket): void {
    this.#socket = socket;
    socket.on('data', this.#onData);
  }

  /** Stops reading from the current socket (before it is handed to TLS). */
  detach(): void {
    this.#socket?.off('data', this.#onData);
    this.#socket = null;
  }

  /**
   * Bytes received and not yet handed out, or a literal still awaited: after STARTTLS's OK there must
   * be none (CVE-2011-0411). A literal announced behind the OK would otherwise take its bytes from
   * inside TLS, where the attacker could not write them.
   */
  get buffered(): number {
    return this.#buffer.length + this.#ready.length + this.#partial.length + this.#literal;
  }

  /** Fails every later `next()` with `err` (the first failure wins). */
  fail(err: Error): void {
    this.#failure ??= err;
    const waiter = this.#waiter;
    this.#waiter = null;
    waiter?.reject(this.#failure);
  }

  next(): Promise<ImapResponse> {
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#waiter === null) return;
    const line = this.#ready.shift();
    if (line === undefined) {
      if (this.#failure !== null) this.fail(this.#failure);
      return;
    }
    const waiter = this.#waiter;
    this.#waiter = null;
    try {
      waiter.resolve(parseResponse(line));
    } catch (err) {
      this.#failure ??= err as Error;
      waiter.reject(this.#failure);
    }
  }

  #receive(chunk: Buffer): void {
    if (this.#failure !== null) return;
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    for (;;) {
      if (this.#literal > 0) {
        // The literal's bytes are skipped: nothing a login decides on is inside one.
        const take = Math.min(this.#literal, this.#buffer.length);
        this.#literal -= take;
        this.#buffer = this.#buffer.subarray(take);
        if (this.#literal > 0) return;
        this.#partial += '""';
        continue;
      }
      const end = this.#buffer.indexOf('\r\n');
      if (end < 0) {
        if (this.#buffer.length + this.#partial.length > MAX_LINE_BYTES)
          this.fail(new ImapProtocolError(`a line longer than ${MAX_LINE_BYTES} bytes`));
        return;
      }
      if (end + this.#partial.length > MAX_LINE_BYTES) {
        this.fail(new ImapProtocolError(`a line longer than ${MAX_LINE_BYTES} bytes`));
        return;
      }
      const line = this.#partial + this.#buffer.subarray(0, end).toString('utf8');
      this.#buffer = this.#buffer.subarray(end + 2);
      const literal = LITERAL_AT_END.exec(line);
      if (literal !== null && !line.startsWith('+')) {
        const size = Number(literal[1]);
        if (size > MAX_LITERAL_BYTES) {
          this.fail(new ImapProtocolError(`a literal of ${literal[1]} bytes`));
          return;
        }
        this.#partial = line.slice(0, literal.index);
        this.#literal = size;
        if (size === 0) this.#partial += '""';
        continue;
      }
      this.#partial = '';
      this.#ready.push(line);
      if (this.#ready.length > MAX_QUEUED_RESPONSES) {
        this.fail(new ImapProtocolError(`more than ${MAX_QUEUED_RESPONSES} responses unread`));
        return;
      }
      this.#flush();
    }
  }
}

/** Sorts what ended an attempt into the contract's failure classes (contract §3, §5). */
export function classifyImapError(error: unknown): { failure: BackendFailure; reason: string } {
  if (error instanceof ImapProtocolError) return { failure: 'upstream_misconfigured', reason: error.message };
  if (error instanceof ImapClosedError) return { failure: 'upstream_unavailable', reason: error.message };
  const err = (error ?? {}) as { message?: unknown; code?: unknown };
  const code = typeof err.code === 'string' ? err.code : '';
  // Certificate and handshake failures: a configuration problem, never worth a retry.
  const tls = tlsFailure(error);
  if (tls !== null) return { failure: 'upstream_misconfigured', reason: tls };
  return {
    failure: 'upstream_unavailable',
    reason: code === '' ? String(err.message ?? error).slice(0, 200) : code,
  };
}
