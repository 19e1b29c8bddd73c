// The frame guard between the directory's socket and ldapts (docs/security.md: the LDAP path): ldapts
// reads and writes one end of a duplex pair, the guard holds the other and the socket. It sees each
// request ldapts writes, whole, before forwarding it, and passes an answer on only if it answers a
// request already forwarded in full, with a response type that request allows (RFC 4511 §4.5.2: a
// search draws entries, references and one done; a bind or an extended request one answer), each read
// vetted whole before any of it passes. Anything else (another message id, an answer before its
// request, a second answer, a wrong type, a malformed or oversize message) ends the attempt as
// `upstream_misconfigured` and destroys the connection; a Notice of Disconnection (§4.4.1) as
// `upstream_unavailable`. Hand-written, like the IMAP client: this is the verdict boundary (contract
// §8: a bind succeeds only on the directory's answer to the service's own request), and ldapts, a
// general client, drops unknown ids and keeps half-read bytes instead of refusing them. The group
// sync also sends requests of its own through the guard (send(): paged-search.ts), under the same
// rules; their answers go to it instead of ldapts.
import type { Socket } from 'node:net';
import { type Duplex, duplexPair } from 'node:stream';
import { UnbindRequest } from 'ldapts';
import {
  type Element,
  type Envelope,
  FrameSplitter,
  MAX_MESSAGE_BYTES,
  NOTICE_OF_DISCONNECTION_OID,
  OP,
  readEnvelope,
  readResult,
} from './ber.ts';
import { classifyLdapError, LdapFailure, outOfProtocol } from './errors.ts';

export interface FrameGuard {
  /** ldapts's end: an already-connected socket-like stream that carries only vetted answers. */
  readonly stream: Duplex;
  /** Rejects with the LdapFailure that ended the connection; never resolves. */
  readonly ended: Promise<never>;
  /** The failure that ended the connection, once one did. */
  failure(): LdapFailure | null;
  /** Ends a sound connection politely (an UnbindRequest, flushed within a bound), then destroys it. */
  close(): Promise<void>;
  /** Destroys both ends and the socket. */
  destroy(): void;
  /**
   * Sends a request of our own beside ldapts's: `encode` makes it with a message id above every id
   * sent so far, and each answer to it, vetted as ldapts's are, goes to `answer` instead of ldapts.
   */
  send(encode: (messageId: number) => Buffer, answer: (frame: Buffer, op: Element) => void): void;
}

/** UnbindRequest is best effort (RFC 4511 §4.3 has no answer): flushed, never waited for beyond this. */
const UNBIND_FLUSH_MS = 100;

interface Expected {
  /** Response types the request may draw. */
  readonly allowed: readonly number[];
  /** The one that completes it. */
  readonly last: number;
}

/** RFC 4511 §4.2–§4.12: the answers each request ldapts sends for us may draw. */
const ANSWERS: ReadonlyMap<number, Expected> = new Map([
  [OP.bindRequest, { allowed: [OP.bindResponse], last: OP.bindResponse }],
  [
    OP.searchRequest,
    {
      allowed: [OP.searchResultEntry, OP.searchResultReference, OP.searchResultDone],
      last: OP.searchResultDone,
    },
  ],
  [OP.extendedRequest, { allowed: [OP.extendedResponse], last: OP.extendedResponse }],
]);

/** Answers that carry an LDAPResult, read here so that ldapts never decides on one it cannot read. */
const RESULTS: readonly number[] = [OP.bindResponse, OP.searchResultDone, OP.extendedResponse];

const hex = (tag: number) => `0x${tag.toString(16)}`;

/** RFC 4511 §4.1.1: message ids run to 2^31 - 1. */
const MAX_MESSAGE_ID = 2 ** 31 - 1;

/**
 * Wraps a connected (and, unless `plain`, secure) socket; ldapts gets `stream`. `maxMessageBytes`
 * bounds each answer (default: a login's, ber.ts).
 */
export function guardFrames(socket: Socket, maxMessageBytes = MAX_MESSAGE_BYTES): FrameGuard {
  const [ours, theirs] = duplexPair();
  // ldapts treats a connection that is open and not connecting as connected (Client._connect);
  // the guard's end is both from the start, since the socket behind it is.
  Object.defineProperty(theirs, 'readyState', { value: 'open' });
  /** Requests forwarded in full and not yet completely answered: message id → request type. */
  const pending = new Map<number, number>();
  /** Of those, our own (send()): message id → where its answers go, and the type of the last. */
  const own = new Map<number, { answer: (frame: Buffer, op: Element) => void; last: number }>();
  let highestSent = 0;
  let closing = false;
  let failed: LdapFailure | null = null;
  let reject: (failure: LdapFailure) => void = () => undefined;
  const ended = new Promise<never>((_, rejectEnded) => {
    reject = rejectEnded;
  });
  // Raced by the attempt; a rejection after the verdict (our own close) concerns no one.
  ended.catch(() => undefined);

  const destroy = () => {
    ours.destroy();
    theirs.destroy();
    socket.destroy();
  };
  const end = (failure: LdapFailure) => {
    if (failed !== null) return;
    failed = failure;
    reject(failure);
    destroy();
  };

  /** `frame`'s envelope if it may pass, else why not; updates what is pending as if it passed. */
  const vet = (frame: Buffer): Envelope | LdapFailure => {
    const envelope = readEnvelope(frame);
    if (!envelope.ok) return outOfProtocol(`malformed LDAP message: ${envelope.reason}`);
    const { id, op } = envelope.value;
    const result = RESULTS.includes(op.tag) ? readResult(frame, op) : null;
    if (result !== null && !result.ok) return outOfProtocol(`malformed LDAPResult: ${result.reason}`);
    if (id === 0) {
      if (op.tag === OP.extendedResponse && result?.ok && result.value.name === NOTICE_OF_DISCONNECTION_OID)
        return new LdapFailure(
          'upstream_unavailable',
          `Notice of Disconnection (LDAP result ${result.value.code})`,
        );
      return outOfProtocol('an unsolicited message that is not a Notice of Disconnection');
    }
    const request = pending.get(id);
    if (request === undefined) {
      return outOfProtocol(
        id > highestSent
          ? `an answer for message id ${id} before that request was sent`
          : `an answer for message id ${id}, which awaits none`,
      );
    }
    const expected = ANSWERS.get(request);
    if (expected === undefined || !expected.allowed.includes(op.tag))
      return outOfProtocol(`protocolOp ${hex(op.tag)} in answer to ${hex(request)}`);
    if (op.tag === expected.last) pending.delete(id);
    return envelope.value;
  };

  /** Counts `frame` (whole, vetted) as sent and forwards it. */
  const forward = (id: number, tag: number, frame: Buffer) => {
    if (ANSWERS.has(tag)) pending.set(id, tag);
    // RFC 4511 §4.3: after UnbindRequest nothing more is read; the connection is closing.
    if (tag === OP.unbindRequest) closing = true;
    highestSent = Math.max(highestSent, id);
    socket.write(frame);
  };

  // ldapts → directory: a request counts as sent once the guard has it whole and has forwarded it.
  const outbound = new FrameSplitter();
  ours.on('data', (chunk: Buffer) => {
    const split = outbound.push(chunk);
    if (!split.ok) return end(outOfProtocol(`our own request: ${split.reason}`));
    for (const frame of split.value) {
      const envelope = readEnvelope(frame);
      if (!envelope.ok) return end(outOfProtocol(`our own request: ${envelope.reason}`));
      const { id, op } = envelope.value;
      // Two requests in flight under one id could not be told apart by their answers.
      if (pending.has(id)) return end(outOfProtocol(`our own request: message id ${id} is in flight`));
      forward(id, op.tag, frame);
    }
  });
  ours.on('end', () => socket.end());
  ours.on('error', () => undefined);

  // directory → ldapts: every frame of a read is vetted before any of them is passed on, so a
  // forgery riding behind a genuine answer voids it rather than racing it.
  const inbound = new FrameSplitter(maxMessageBytes);
  socket.on('data', (chunk: Buffer) => {
    if (failed !== null || closing) return;
    const split = inbound.push(chunk);
    if (!split.ok) return end(outOfProtocol(split.reason));
    const envelopes: Envelope[] = [];
    for (const frame of split.value) {
      const verdict = vet(frame);
      if (verdict instanceof LdapFailure) return end(verdict);
      envelopes.push(verdict);
    }
    split.value.forEach((frame, i) => {
      const { id, op } = envelopes[i] as Envelope;
      const request = own.get(id);
      if (request === undefined) {
        ours.write(frame);
        return;
      }
      if (op.tag === request.last) own.delete(id);
      request.answer(frame, op);
    });
  });
  socket.on('error', (err) => {
    if (closing) return;
    const { failure, reason } = classifyLdapError(err);
    end(new LdapFailure(failure, reason));
  });
  socket.on('close', () => {
    if (!closing) end(new LdapFailure('upstream_unavailable', 'connection closed'));
  });

  /**
   * RFC 4511 §4.3: the UnbindRequest, written here rather than by ldapts (whose unbind destroys its
   * stream inside the write's own callback, an error object per login), then everything destroyed.
   */
  const close = async () => {
    if (failed !== null || closing || socket.destroyed) return destroy();
    closing = true;
    const unbind = new UnbindRequest({ messageId: (highestSent % MAX_MESSAGE_ID) + 1 }).write();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, UNBIND_FLUSH_MS);
      socket.end(unbind, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    destroy();
  };

  const send = (encode: (messageId: number) => Buffer, answer: (frame: Buffer, op: Element) => void) => {
    if (failed !== null || closing) return;
    const id = (highestSent % MAX_MESSAGE_ID) + 1;
    const frame = encode(id);
    const envelope = readEnvelope(frame);
    const expected = envelope.ok ? ANSWERS.get(envelope.value.op.tag) : undefined;
    if (!envelope.ok || envelope.value.id !== id || expected === undefined)
      return end(outOfProtocol('our own request: not a request with the id it was given'));
    own.set(id, { answer, last: expected.last });
    forward(id, envelope.value.op.tag, frame);
  };

  return { stream: theirs, ended, failure: () => failed, close, destroy, send };
}
