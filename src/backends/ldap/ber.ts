// The few BER elements the LDAP verdict boundary reads (contract §8): the LDAPMessage envelope, its
// messageID and protocolOp tag, an LDAPResult's resultCode and an ExtendedResponse's name. Every
// read is bounded by the bytes at hand and by MAX_MESSAGE_BYTES, and a malformed element is a
// result, never an exception. Hand-written, like the IMAP reader (imap/lines.ts): this is where
// the service decides what counts as the directory's answer, and ldapts's parser is lenient
// exactly there (an LDAPResult whose resultCode it cannot read counts as success, 0).

/** RFC 4511 §4.2 protocolOp tags ([APPLICATION n]) that the login and the probe use. */
export const OP = {
  bindRequest: 0x60,
  bindResponse: 0x61,
  unbindRequest: 0x42,
  searchRequest: 0x63,
  searchResultEntry: 0x64,
  searchResultDone: 0x65,
  searchResultReference: 0x73,
  abandonRequest: 0x50,
  extendedRequest: 0x77,
  extendedResponse: 0x78,
} as const;

/** RFC 4511 §4.14.1 (StartTLS) and §4.4.1 (Notice of Disconnection). */
export const STARTTLS_OID = '1.3.6.1.4.1.1466.20037';
export const NOTICE_OF_DISCONNECTION_OID = '1.3.6.1.4.1.1466.20036';

/**
 * A login reads small messages (a bind answer, one entry with no attributes, the root DSE's
 * version); 64 KiB holds any of them with room for diagnostics and controls. The group sync reads
 * whole group entries (every member DN) and passes its own, larger bound.
 */
export const MAX_MESSAGE_BYTES = 64 * 1024;

/** RFC 4511 §4.1.1: MessageID ::= INTEGER (0 .. maxInt), maxInt 2^31 - 1. */
const MAX_INT = 2 ** 31 - 1;

export type Parsed<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: string };

const bad = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

/** One element: its tag, where its content starts and ends (exclusive). */
export interface Element {
  readonly tag: number;
  readonly start: number;
  readonly end: number;
}

/**
 * Reads the header of the element at `at`, which must end by `limit`. 'incomplete' when the
 * bytes so far do not hold the whole header (only a stream reader may wait for more).
 */
function readHeader(buf: Uint8Array, at: number, limit: number): Parsed<Element> | 'incomplete' {
  if (at + 2 > limit) return 'incomplete';
  const tag = buf[at] ?? 0;
  // X.690 §8.1.2.4: a high tag number; no element of LDAP has one.
  if ((tag & 0x1f) === 0x1f) return bad(`tag 0x${tag.toString(16)} is not LDAP's`);
  const first = buf[at + 1] ?? 0;
  if (first < 0x80) return { ok: true, value: { tag, start: at + 2, end: at + 2 + first } };
  // RFC 4511 §5.1: only the definite form of length encoding; 0x80 is the indefinite form.
  const count = first & 0x7f;
  if (count === 0) return bad('an indefinite length');
  // Four length bytes reach 4 GiB: far past any bound here (long forms that are not the shortest
  // are allowed: OpenLDAP's liblber writes four length bytes where one would do).
  if (count > 4) return bad(`a length of ${count} bytes`);
  if (at + 2 + count > limit) return 'incomplete';
  let length = 0;
  for (let i = 0; i < count; i++) length = length * 256 + (buf[at + 2 + i] ?? 0);
  const start = at + 2 + count;
  return { ok: true, value: { tag, start, end: start + length } };
}

/** The element at `at`, wholly inside `limit`. */
export function readElement(buf: Uint8Array, at: number, limit: number): Parsed<Element> {
  const header = readHeader(buf, at, limit);
  if (header === 'incomplete') return bad('a truncated element');
  if (header.ok && header.value.end > limit) return bad('an element longer than what holds it');
  return header;
}

/** A non-negative INTEGER or ENUMERATED of at most 31 bits (message ids, result codes). */
function readSmallInteger(buf: Uint8Array, element: Element, tag: number): Parsed<number> {
  if (element.tag !== tag) return bad(`0x${element.tag.toString(16)} where 0x${tag.toString(16)} belongs`);
  const size = element.end - element.start;
  if (size < 1 || size > 4) return bad(`an integer of ${size} bytes`);
  if ((buf[element.start] ?? 0) & 0x80) return bad('a negative integer');
  let value = 0;
  for (let i = element.start; i < element.end; i++) value = value * 256 + (buf[i] ?? 0);
  if (value > MAX_INT) return bad('an integer past maxInt');
  return { ok: true, value };
}

/** RFC 4511 §4.2: LDAPMessage ::= SEQUENCE { messageID, protocolOp, controls [0] OPTIONAL }. */
export interface Envelope {
  readonly id: number;
  /** The protocolOp element (its tag says which operation). */
  readonly op: Element;
}

/** Reads a whole frame as one LDAPMessage: nothing missing, nothing extra. */
export function readEnvelope(frame: Uint8Array): Parsed<Envelope> {
  const outer = readElement(frame, 0, frame.length);
  if (!outer.ok) return outer;
  if (outer.value.tag !== 0x30) return bad('a message that is not a SEQUENCE');
  if (outer.value.end !== frame.length) return bad('bytes past the end of a message');
  const idElement = readElement(frame, outer.value.start, frame.length);
  if (!idElement.ok) return idElement;
  const id = readSmallInteger(frame, idElement.value, 0x02);
  if (!id.ok) return bad(`messageID: ${id.reason}`);
  const op = readElement(frame, idElement.value.end, frame.length);
  if (!op.ok) return bad(`protocolOp: ${op.reason}`);
  if (op.value.end < frame.length) {
    const controls = readElement(frame, op.value.end, frame.length);
    if (!controls.ok) return bad(`controls: ${controls.reason}`);
    if (controls.value.tag !== 0xa0 || controls.value.end !== frame.length)
      return bad('something other than controls after the protocolOp');
  }
  return { ok: true, value: { id: id.value, op: op.value } };
}

/** What the service reads of an LDAPResult (RFC 4511 §4.1.9) and of an ExtendedResponse (§4.12). */
export interface LdapResult {
  readonly code: number;
  /** ExtendedResponse only: responseName [10], when present. */
  readonly name: string | null;
}

/** resultCode, matchedDN and diagnosticMessage in order, then what may follow for this operation. */
export function readResult(frame: Uint8Array, op: Element): Parsed<LdapResult> {
  const codeElement = readElement(frame, op.start, op.end);
  if (!codeElement.ok) return codeElement;
  const code = readSmallInteger(frame, codeElement.value, 0x0a);
  if (!code.ok) return bad(`resultCode: ${code.reason}`);
  let at = codeElement.value.end;
  for (const field of ['matchedDN', 'diagnosticMessage']) {
    const element = readElement(frame, at, op.end);
    if (!element.ok || element.value.tag !== 0x04) return bad(`${field} missing`);
    at = element.value.end;
  }
  let name: string | null = null;
  while (at < op.end) {
    const element = readElement(frame, at, op.end);
    if (!element.ok) return element;
    const { tag, start, end } = element.value;
    // referral [3], BindResponse's serverSaslCreds [7], ExtendedResponse's responseName [10] and
    // responseValue [11]: the fields that may follow an LDAPResult in the answers we accept.
    if (tag === 0x8a) name = Buffer.from(frame.subarray(start, end)).toString('latin1');
    else if (tag !== 0xa3 && tag !== 0x87 && tag !== 0x8b)
      return bad(`0x${tag.toString(16)} inside an LDAPResult`);
    at = end;
  }
  return { ok: true, value: { code: code.value, name } };
}

/** Splits a byte stream into whole LDAPMessage frames, refusing one past its bound at its header. */
export class FrameSplitter {
  #buffer: Buffer = Buffer.alloc(0);
  /** Chunks behind #buffer not yet joined to it: a big frame is joined once, not once per chunk. */
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** The size the current frame needs before it is worth joining the chunks again. */
  #awaiting = 0;
  readonly #maxBytes: number;

  constructor(maxBytes: number = MAX_MESSAGE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** The frames now complete; a malformed or oversize header ends the stream. */
  push(chunk: Buffer): Parsed<Buffer[]> {
    if (this.#awaiting > 0 && this.#buffer.length + this.#pendingBytes + chunk.length < this.#awaiting) {
      this.#pending.push(chunk);
      this.#pendingBytes += chunk.length;
      return { ok: true, value: [] };
    }
    this.#buffer =
      this.#buffer.length === 0 && this.#pending.length === 0
        ? chunk
        : Buffer.concat([this.#buffer, ...this.#pending, chunk]);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#awaiting = 0;
    const frames: Buffer[] = [];
    for (;;) {
      const header = readHeader(this.#buffer, 0, this.#buffer.length);
      if (header === 'incomplete') return { ok: true, value: frames };
      if (!header.ok) return header;
      if (header.value.tag !== 0x30) return bad('a message that is not a SEQUENCE');
      // Refused as soon as the length is known: a hostile peer never makes us wait for, or hold, more.
      if (header.value.end > this.#maxBytes)
        return bad(`a message of ${header.value.end} bytes (limit ${this.#maxBytes})`);
      if (this.#buffer.length < header.value.end) {
        this.#awaiting = header.value.end;
        return { ok: true, value: frames };
      }
      frames.push(this.#buffer.subarray(0, header.value.end));
      this.#buffer = this.#buffer.subarray(header.value.end);
    }
  }

  /** Bytes received past the last whole frame. */
  get buffered(): number {
    return this.#buffer.length + this.#pendingBytes;
  }
}
