// A verify-only IMAP client (contract §5, issue 12): greeting, CAPABILITY, STARTTLS, AUTHENTICATE
// PLAIN (SASL-IR where offered) or LOGIN with literals, ID, LOGOUT, and nothing of a mail client.
// A login is verified only by the tagged OK to our own LOGIN/AUTHENTICATE, over TLS unless `plain`;
// a PREAUTH greeting, an untagged OK, another tag's answer or anything out of protocol is
// `upstream_misconfigured`. One deadline covers everything; the socket is destroyed in `finally`.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { LoginFailure, ProbeResult, VerifyResult } from '../authenticator.ts';
import type { TlsOptions } from '../tls.ts';
import { capabilitiesOf, idCommand, loginSegments } from './commands.ts';
import { classifyImapError, ImapClosedError, ImapProtocolError, ResponseReader } from './lines.ts';

/** One IMAP server as the settings describe it (contract §5); TLS options are built apart, once. */
export interface ImapSettings {
  readonly host: string;
  readonly port: number;
  readonly security: 'tls' | 'starttls' | 'plain';
  readonly caFile: string | null;
  readonly timeoutMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  readonly forwardClientIp: boolean;
}

/** Untagged responses one command may draw: a login sees a handful (CAPABILITY, ID, ALERTs). */
const MAX_UNTAGGED_PER_COMMAND = 64;
/** LOGOUT is best effort: flushed, never waited for beyond this. */
const LOGOUT_FLUSH_MS = 100;

interface Tagged {
  readonly status: 'OK' | 'NO' | 'BAD';
  /** The response code's name (`AUTHENTICATIONFAILED`), upper-cased; '' when there is none. */
  readonly code: string;
  readonly untagged: readonly string[];
}

/** One connection: our own tags (a1, a2, …), a bounded reader, and the socket it must close. */
class Connection {
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
      // `OK[ALERT]` is no status at all (issue 22, defect 9); the code is `[` atom, up to `]`.
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

/** Greeting, STARTTLS when configured, then the capabilities that count (read over TLS unless plain). */
async function establish(conn: Connection, settings: ImapSettings, tls: TlsOptions): Promise<Set<string>> {
  let caps = await conn.greet();
  if (settings.security === 'starttls') {
    caps ??= await conn.capability();
    // contract §5: STARTTLS is required, never opportunistic.
    if (!caps.has('STARTTLS')) throw new ImapProtocolError('STARTTLS not offered');
    await conn.startTls(tls);
    // RFC 9051 §6.2.1: capabilities learned before TLS are discarded and read again.
    caps = await conn.capability();
  }
  caps ??= await conn.capability();
  if (caps.has('LOGINDISABLED')) throw new ImapProtocolError('LOGINDISABLED');
  return caps;
}

/** Opens a connection, runs `work` within the one deadline, and always destroys the socket. */
async function withConnection<T>(
  settings: ImapSettings,
  tls: TlsOptions,
  work: (conn: Connection) => Promise<T>,
  failed: (failure: LoginFailure, reason: string) => T,
): Promise<T> {
  let conn: Connection | null = null;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(
      () => resolve(failed('upstream_unavailable', `no answer within ${settings.timeoutMs} ms`)),
      settings.timeoutMs,
    );
  });
  const attempt = (async () => {
    conn = new Connection(settings, tls);
    return work(conn);
  })().catch((err: unknown) => {
    const { failure, reason } = classifyImapError(err);
    return failed(failure, reason);
  });
  try {
    return await Promise.race([attempt, deadline]);
  } finally {
    clearTimeout(timer);
    (conn as Connection | null)?.socket.destroy();
  }
}

/**
 * Verifies a username and password by one IMAP login (contract §5): "ok" only on the tagged OK
 * to our own AUTHENTICATE or LOGIN, else a classified failure. Never throws.
 */
export function verifyImapLogin(
  settings: ImapSettings,
  tls: TlsOptions,
  username: string,
  password: string,
  clientIp: string,
): Promise<VerifyResult> {
  // NUL, CR and LF cannot travel in SASL PLAIN or a literal; the login refuses them earlier (§3).
  if (/[\0\r\n]/.test(username) || /[\0\r\n]/.test(password)) {
    return Promise.resolve({ ok: false, failure: 'rejected_input', reason: 'control character' });
  }
  return withConnection<VerifyResult>(
    settings,
    tls,
    async (conn) => {
      const caps = await establish(conn, settings, tls);
      if (settings.security !== 'plain' && !conn.secure) throw new ImapProtocolError('not over TLS');
      // contract §5: the client's address travels over TLS only, and only to a server that has ID.
      if (settings.forwardClientIp && conn.secure && caps.has('ID')) {
        await conn.command([idCommand(clientIp)]);
      }
      const answer = await conn.command(loginSegments(caps, username, password));
      await conn.logout();
      if (answer.status === 'OK') return { ok: true };
      if (answer.status === 'BAD')
        return { ok: false, failure: 'upstream_misconfigured', reason: 'IMAP BAD' };
      // RFC 5530: UNAVAILABLE is a temporary failure of the server's own backend, not a wrong password.
      if (answer.code === 'UNAVAILABLE')
        return { ok: false, failure: 'upstream_unavailable', reason: 'IMAP [UNAVAILABLE]' };
      return {
        ok: false,
        failure: 'bad_credentials',
        reason: answer.code === '' ? 'IMAP NO' : `IMAP [${answer.code}]`,
      };
    },
    (failure, reason) => ({ ok: false, failure, reason }),
  );
}

/**
 * Probes the IMAP server without credentials (contract §5, §6): connect, TLS, greeting,
 * capabilities (after STARTTLS when required), login not disabled; within the one deadline.
 */
export function probeImapServer(settings: ImapSettings, tls: TlsOptions): Promise<ProbeResult> {
  return withConnection<ProbeResult>(
    settings,
    tls,
    async (conn) => {
      await establish(conn, settings, tls);
      await conn.logout();
      return { ok: true };
    },
    (failure, reason) => ({ ok: false, reason: `${failure}: ${reason}` }),
  );
}
