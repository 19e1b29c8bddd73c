// StartTLS done here, before ldapts ever sees the connection (docs/security.md: the LDAP path).
// ldapts's own startTLS keeps whatever it half-read of the plaintext in its message parser across the
// upgrade, so an on-path attacker's forged BindResponse prefix, completed by the real answer inside
// TLS, became a success. Here the plaintext phase is one request and exactly one answer: any byte
// received beyond that answer was injected (the CVE-2011-0411 class, as imap/client.ts refuses it)
// and ends the attempt as `upstream_misconfigured` (contract §8); TLS then starts on the bare socket,
// and ldapts is handed only what comes out of TLS (connection.ts).
import type { Socket } from 'node:net';
import { type ConnectionOptions, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { ExtendedRequest } from 'ldapts';
import {
  FrameSplitter,
  NOTICE_OF_DISCONNECTION_OID,
  OP,
  readEnvelope,
  readResult,
  STARTTLS_OID,
} from './ber.ts';
import { LdapFailure, outOfProtocol } from './errors.ts';

/** Our StartTLS request's message id; ldapts numbers its own requests from 2, after it. */
const STARTTLS_MESSAGE_ID = 1;

const INJECTED_REASON = 'plaintext injected behind the StartTLS answer';

/** RFC 4511 §4.14.1: ExtendedRequest { requestName 1.3.6.1.4.1.1466.20037 }, encoded by ldapts. */
const REQUEST = new ExtendedRequest({ messageId: STARTTLS_MESSAGE_ID, oid: STARTTLS_OID }).write();

/**
 * Why the one plaintext answer does not allow TLS to start, or null when it does: it must be the
 * ExtendedResponse to our own request, `success`, and name StartTLS if it names anything (RFC 4511
 * §4.14.2). A Notice of Disconnection means the server is going away (§4.4.1).
 */
function refuseStartTlsAnswer(frame: Buffer): LdapFailure | null {
  const envelope = readEnvelope(frame);
  if (!envelope.ok) return outOfProtocol(`malformed StartTLS answer: ${envelope.reason}`);
  const { id, op } = envelope.value;
  if (op.tag !== OP.extendedResponse)
    return outOfProtocol(`StartTLS answered with protocolOp 0x${op.tag.toString(16)}`);
  const result = readResult(frame, op);
  if (!result.ok) return outOfProtocol(`malformed StartTLS answer: ${result.reason}`);
  if (id === 0 && result.value.name === NOTICE_OF_DISCONNECTION_OID)
    return new LdapFailure(
      'upstream_unavailable',
      `Notice of Disconnection (LDAP result ${result.value.code})`,
    );
  if (id !== STARTTLS_MESSAGE_ID) return outOfProtocol(`StartTLS answered for message id ${id}`);
  // contract §8: required, never opportunistic; a refusal is a misconfiguration.
  if (result.value.code !== 0) return outOfProtocol(`StartTLS refused: LDAP result ${result.value.code}`);
  if (result.value.name !== null && result.value.name !== STARTTLS_OID)
    return outOfProtocol('StartTLS answered for another extended operation');
  return null;
}

/**
 * Sends StartTLS on the connected plaintext `socket`, reads exactly one answer, and starts TLS over
 * the same socket with `options` (the caller awaits `secureConnect`). Rejects with an LdapFailure,
 * or with the socket's own error (a reset is `upstream_unavailable`).
 */
export function startTls(socket: Socket, options: ConnectionOptions): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const splitter = new FrameSplitter();
    const stop = () => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
    };
    const fail = (err: Error) => {
      stop();
      reject(err);
    };
    const onError = (err: Error) => fail(err);
    const onClose = () =>
      fail(new LdapFailure('upstream_unavailable', 'connection closed before the StartTLS answer'));
    const onData = (chunk: Buffer) => {
      const split = splitter.push(chunk);
      if (!split.ok) return fail(outOfProtocol(`StartTLS answer: ${split.reason}`));
      const [answer, ...more] = split.value;
      if (answer === undefined) return;
      // Whatever came with or behind the answer came in plaintext and would be read as if from
      // inside TLS: an injection, refused, never handed on (contract §8).
      if (more.length > 0 || splitter.buffered > 0) return fail(outOfProtocol(INJECTED_REASON));
      const refusal = refuseStartTlsAnswer(answer);
      if (refusal !== null) return fail(refusal);
      stop();
      // In the same turn as the last plaintext read: TLS takes the socket over before another
      // byte can be read as plaintext (what arrives from now on must be a TLS record).
      resolve(tlsConnect({ ...options, socket }));
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.write(REQUEST);
  });
}
