// LDAP messages as bytes, for the adversarial LDAP suite (test/ldap/): the encoders a forger needs
// (BindResponse, ExtendedResponse, SearchResultEntry, SearchResultDone) and a splitter of a byte
// stream into LDAPMessage envelopes. The harness's own, written from RFC 4511 §4 and X.690, and
// independent of the code under test, so a mistake there cannot hide in both.

/** RFC 4511 §4.2–§4.12 protocolOp tags ([APPLICATION n], constructed or primitive). */
export const OP = {
  bindRequest: 0x60,
  bindResponse: 0x61,
  unbindRequest: 0x42,
  searchRequest: 0x63,
  searchResultEntry: 0x64,
  searchResultDone: 0x65,
  searchResultReference: 0x73,
  extendedRequest: 0x77,
  extendedResponse: 0x78,
} as const;

export const STARTTLS_OID = '1.3.6.1.4.1.1466.20037';
export const NOTICE_OF_DISCONNECTION_OID = '1.3.6.1.4.1.1466.20036';

/** X.690 §8.1.3: definite length, short form below 128, else long form. */
function lengthOf(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** One element: tag, length, content. */
export function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), lengthOf(body.length), body]);
}

/** A non-negative INTEGER or ENUMERATED in its shortest two's-complement form. */
function integer(tag: number, n: number): Buffer {
  const bytes: number[] = [];
  let rest = n;
  do {
    bytes.unshift(rest % 256);
    rest = Math.floor(rest / 256);
  } while (rest > 0);
  if ((bytes[0] ?? 0) & 0x80) bytes.unshift(0);
  return tlv(tag, Buffer.from(bytes));
}

const octets = (tag: number, text: string) => tlv(tag, Buffer.from(text, 'utf8'));

/** RFC 4511 §4.2: LDAPMessage ::= SEQUENCE { messageID, protocolOp }. */
export function ldapMessage(id: number, op: Buffer): Buffer {
  return tlv(0x30, integer(0x02, id), op);
}

/** RFC 4511 §4.1.9: the LDAPResult fields (resultCode, matchedDN, diagnosticMessage, referral). */
function result(code: number, diagnostic: string, referral: readonly string[]): Buffer[] {
  const fields = [integer(0x0a, code), octets(0x04, ''), octets(0x04, diagnostic)];
  if (referral.length > 0) fields.push(tlv(0xa3, ...referral.map((uri) => octets(0x04, uri))));
  return fields;
}

export function bindResponse(id: number, code: number, referral: readonly string[] = []): Buffer {
  return ldapMessage(id, tlv(OP.bindResponse, ...result(code, '', referral)));
}

export function searchResultDone(id: number, code: number): Buffer {
  return ldapMessage(id, tlv(OP.searchResultDone, ...result(code, '', [])));
}

/** RFC 4511 §4.12: ExtendedResponse with an optional responseName [10]. */
export function extendedResponse(id: number, code: number, name?: string, diagnostic = ''): Buffer {
  const fields = result(code, diagnostic, []);
  if (name !== undefined) fields.push(octets(0x8a, name));
  return ldapMessage(id, tlv(OP.extendedResponse, ...fields));
}

/** RFC 4511 §4.4.1: the unsolicited Notice of Disconnection (message id 0, `unavailable`). */
export function noticeOfDisconnection(): Buffer {
  return extendedResponse(0, 52, NOTICE_OF_DISCONNECTION_OID, 'going away');
}

/** RFC 4511 §4.5.2: a SearchResultEntry with no attributes. */
export function searchResultEntry(id: number, dn: string): Buffer {
  return ldapMessage(id, tlv(OP.searchResultEntry, octets(0x04, dn), tlv(0x30)));
}

/** RFC 4511 §4.5.3: a SearchResultReference (continuation reference) to `uri`. */
export function searchResultReference(id: number, uri: string): Buffer {
  return ldapMessage(id, tlv(OP.searchResultReference, octets(0x04, uri)));
}

/** The parts of an envelope a relay needs: message id, protocolOp tag, and the whole bytes. */
export interface Frame {
  readonly id: number;
  readonly op: number;
  readonly bytes: Buffer;
}

/** Reads a header (tag, length) at `at`; null while incomplete. */
function header(buf: Buffer, at: number): { start: number; end: number } | null {
  if (buf.length < at + 2) return null;
  const first = buf[at + 1] ?? 0;
  if (first < 0x80) return { start: at + 2, end: at + 2 + first };
  const count = first & 0x7f;
  if (buf.length < at + 2 + count) return null;
  let length = 0;
  for (let i = 0; i < count; i++) length = length * 256 + (buf[at + 2 + i] ?? 0);
  return { start: at + 2 + count, end: at + 2 + count + length };
}

/** Splits a stream of well-formed LDAP messages (a real server's or client's) into frames. */
export class FrameSplitter {
  #buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    const frames: Frame[] = [];
    for (;;) {
      const outer = header(this.#buffer, 0);
      if (outer === null || this.#buffer.length < outer.end) return frames;
      const bytes = this.#buffer.subarray(0, outer.end);
      this.#buffer = this.#buffer.subarray(outer.end);
      const idHeader = header(bytes, outer.start);
      let id = 0;
      for (let i = idHeader?.start ?? 0; i < (idHeader?.end ?? 0); i++) id = id * 256 + (bytes[i] ?? 0);
      frames.push({ id, op: bytes[idHeader?.end ?? 0] ?? 0, bytes });
    }
  }

  /** Bytes received and not yet a whole frame (what follows the last frame). */
  rest(): Buffer {
    const rest = this.#buffer;
    this.#buffer = Buffer.alloc(0);
    return rest;
  }
}

/** The `name` of a BindRequest frame (RFC 4511 §4.2: version, name, authentication). */
export function bindName(frame: Frame): string {
  const op = header(frame.bytes, header(frame.bytes, header(frame.bytes, 0)?.start ?? 0)?.end ?? 0);
  const version = header(frame.bytes, op?.start ?? 0);
  const name = header(frame.bytes, version?.end ?? 0);
  return frame.bytes.subarray(name?.start ?? 0, name?.end ?? 0).toString('utf8');
}
