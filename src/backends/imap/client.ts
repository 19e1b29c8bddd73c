// A verify-only IMAP client (contract §5): greeting, CAPABILITY, STARTTLS, AUTHENTICATE
// PLAIN (SASL-IR where offered) or LOGIN with literals, ID, LOGOUT, and nothing of a mail client.
// A login is verified only by the tagged OK to our own LOGIN/AUTHENTICATE, over TLS unless `plain`;
// a PREAUTH greeting, an untagged OK, another tag's answer or anything out of protocol is
// `upstream_misconfigured`. One deadline covers everything; the socket is destroyed in `finally`.
import {
  type BackendFailure,
  type ProbeResult,
  probeFailed,
  type VerifyResult,
  verifyFailed,
} from '../authenticator.ts';
import { withinDeadline } from '../deadline.ts';
import type { TlsOptions } from '../tls.ts';
import { idCommand, loginSegments } from './commands.ts';
import { Connection } from './connection.ts';
import { classifyImapError, ImapProtocolError } from './lines.ts';
import type { ImapSettings } from './settings.ts';

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
  failed: (failure: BackendFailure, reason: string) => T,
): Promise<T> {
  let conn: Connection | null = null;
  return withinDeadline(
    settings.timeoutMs,
    async () => {
      conn = new Connection(settings, tls);
      return work(conn);
    },
    {
      classify: classifyImapError,
      failed,
      release: () => {
        (conn as Connection | null)?.socket.destroy();
      },
    },
  );
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
    verifyFailed,
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
    probeFailed,
  );
}
