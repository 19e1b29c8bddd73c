// One IMAP connection of the verify-only client (contract §5): our own tags (a1, a2, …),
// a bounded reader (lines.ts), commands that collect untagged lines until their own tagged answer,
// STARTTLS over the same socket, and a best-effort LOGOUT. The verdict on that answer is client.ts's.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TlsOptions } from '../tls.ts';
import { capabilitiesOf } from './commands.ts';
import { ImapClosedError, ImapProtocolError, ResponseReader } from './lines.ts';
import type { ImapSettings } from './settings.ts';

/** Untagged responses one command may draw: a login sees a handful (CAPABILITY, ID, ALERTs). */
const MAX_UNTAGGED_PER_COMMAND = 64;
/** LOGOUT is best effort: flushed, never waited for beyond this. */
const LOGOUT_FLUSH_MS = 100;

export interface Tagged {
  readonly status: 'OK' | 'NO' | 'BAD';
  /** The response code's name (`AUTHENTICATIONFAILED`), upper-cased; '' when there is none. */
  readonly code: string;
  readonly untagged: readonly string[];
}

/** One connection: our own tags (a1, a2, …), a bounded reader, and the socket it must close. */
export class Connection {
  socket: Socket;
  secure: boolean;
  readonly reader = new ResponseReader();
  #tags = 0;

  constructor(settings: ImapSettings, tls: TlsOptions) {
    this.secure = settings.security === 'tls';
    this.socket = this.secure
      ? tlsConnect({ ...tls.options(), port: settings.port })
      : netConnect({ host: settings.host, port: settings.port });
    this.#watch(this.socket);
  }

  /** An 'error' listener before anything else: an unhandled one would crash the process. */
  #watch(socket: Socket): void {
    socket.on('error', (err) => this.reader.fail(err));
    socket.on('close', () => this.reader.fail(new ImapClosedError('connection closed')));
    this.reader.attach(socket);
  }

  /** The greeting: `* OK` goes on (with its capabilities, if any); PREAUTH and BYE end it. */
  async greet(): Promise<Set<string> | null> {
    const greeting = await this.reader.next();
    const text = greeting.kind === 'untagged' ? greeting.text : '';
    // contract §5: a PREAUTH greeting can be forged by anyone on the path; it never counts.
    if (/^PREAUTH\b/i.test(text)) throw new ImapProtocolError('PREAUTH greeting');
    if (/^BYE\b/i.test(text)) throw new ImapClosedError(`BYE: ${text.slice(4, 84)}`);
    if (!/^OK\b/i.test(text)) throw new ImapProtocolError('no IMAP greeting');
    return capabilitiesOf(text);
  }

  /**
   * Sends a command made of `segments`: the first at once, each next one only after a `+`
   * continuation (a synchronising literal, a SASL response). Collects untagged lines until the
   * tagged answer to this command's own tag.
   */
  async command(segments: readonly Buffer[]): Promise<Tagged> {
    const tag = `a${++this.#tags}`;
    this.socket.write(Buffer.concat([Buffer.from(`${tag} `), segments[0] ?? Buffer.alloc(0)]));
    let next = 1;
    const untagged: string[] = [];
    for (;;) {
      const response = await this.reader.next();
      if (response.kind === 'continuation') {
        // No more to send: an endless or unasked-for continuation request is out of protocol.
        const segment = segments[next++];
        if (segment === undefined) throw new ImapProtocolError('unexpected continuation request');
        this.socket.write(segment);
        continue;
      }
      if (response.kind === 'untagged') {
        if (/^BYE\b/i.test(response.text)) throw new ImapClosedError(`BYE: ${response.text.slice(4, 84)}`);
        if (/^PREAUTH\b/i.test(response.text)) throw new ImapProtocolError('PREAUTH after the greeting');
        if (untagged.length >= MAX_UNTAGGED_PER_COMMAND)
          throw new ImapProtocolError('too many untagged responses');
        untagged.push(response.text);
        continue;
      }
      // contract §5: another tag's answer (even an OK) is out of protocol, never a verdict.
      if (response.tag !== tag) throw new ImapProtocolError('a tagged answer to a command never sent');
      // RFC 9051 §7.1: resp-cond-state = ("OK" / "NO" / "BAD") SP resp-text, so `OKAY` or
      // `OK[ALERT]` is no status at all (neither may pass as OK); the code is `[` atom, up to `]`.
      const status = /^(OK|NO|BAD) (?:\[([^\]\s]*))?/i.exec(response.text);
      if (status === null) throw new ImapProtocolError('a tagged answer without OK, NO or BAD');
      const verdict = (status[1] ?? '').toUpperCase() as Tagged['status'];
      if (verdict === 'OK' && next < segments.length)
        throw new ImapProtocolError('OK before the command was sent');
      return { status: verdict, code: (status[2] ?? '').toUpperCase(), untagged };
    }
  }

  async capability(): Promise<Set<string>> {
    const answer = await this.command([Buffer.from('CAPABILITY\r\n')]);
    if (answer.status !== 'OK') throw new ImapProtocolError(`CAPABILITY answered ${answer.status}`);
    const found = answer.untagged.map(capabilitiesOf).find((caps) => caps !== null);
    if (found === undefined) throw new ImapProtocolError('no CAPABILITY response');
    return found;
  }

  /** RFC 9051 §6.2.1: STARTTLS, then TLS over the same socket with the one secure context. */
  async startTls(tls: TlsOptions): Promise<void> {
    const answer = await this.command([Buffer.from('STARTTLS\r\n')]);
    if (answer.status !== 'OK') throw new ImapProtocolError(`STARTTLS refused (${answer.status})`);
    // Bytes behind the OK came in plaintext and would be read as if from inside TLS
    // (CVE-2011-0411 class): an injection attempt, never passed on.
    if (this.reader.buffered > 0) throw new ImapProtocolError('plaintext injected after STARTTLS');
    this.reader.detach();
    const plain = this.socket;
    this.socket = tlsConnect({ ...tls.options(), socket: plain });
    this.#watch(this.socket);
    await new Promise<void>((resolve, reject) => {
      this.socket.once('secureConnect', resolve);
      this.socket.once('error', reject);
      this.socket.once('close', () => reject(new ImapClosedError('connection closed during TLS')));
    });
    this.secure = true;
  }

  /** Best effort: LOGOUT is written and flushed, not waited for (the verdict is already known). */
  async logout(): Promise<void> {
    if (this.socket.destroyed || !this.socket.writable) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, LOGOUT_FLUSH_MS);
      this.socket.end(`a${++this.#tags} LOGOUT\r\n`, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
