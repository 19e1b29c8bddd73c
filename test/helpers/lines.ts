// CRLF lines for the harness's scripted IMAP peers and raw clients, two ways. readLines is node's
// own readline (crlfDelay: Infinity takes CRLF as one break) for a peer that only ever reads whole
// lines. CrlfBuffer splits bytes by hand for a peer that must also see the bytes around the lines:
// a literal's exact byte count, or what is left over when a connection turns to TLS (STARTTLS, a
// relay that passes the handshake through), which readline would have swallowed. The service's own
// reader (src/backends/imap/lines.ts) parses server responses and skips literals: it neither reads
// a client's commands nor hands out bytes, and a test's peer must not depend on what it tests.

import { createInterface, type Interface } from 'node:readline';
import type { Readable } from 'node:stream';

/** Calls `onLine` with each line `input` sends (without its CRLF), until it ends or is closed. */
export function readLines(input: Readable, onLine: (line: string) => void): Interface {
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  lines.on('line', onLine);
  // readline re-emits the input's errors on the interface; they are the input's owner's to handle
  // (a refused or reset connection), not an uncaught exception here.
  lines.on('error', () => undefined);
  return lines;
}

/** Bytes received, handed out as CRLF-terminated lines, literals of a known size, or the rest. */
export class CrlfBuffer {
  #buffer: Buffer = Buffer.alloc(0);

  /** Appends received bytes. */
  push(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
  }

  /** The next complete line without its CRLF, or null until one has arrived. */
  line(): Buffer | null {
    const end = this.#buffer.indexOf('\r\n');
    if (end < 0) return null;
    const line = this.#buffer.subarray(0, end);
    this.#buffer = this.#buffer.subarray(end + 2);
    return line;
  }

  /** Exactly `size` bytes (a literal), or null until they have all arrived. */
  take(size: number): Buffer | null {
    if (this.#buffer.length < size) return null;
    const bytes = this.#buffer.subarray(0, size);
    this.#buffer = this.#buffer.subarray(size);
    return bytes;
  }

  /** Everything received and not handed out yet, which is then forgotten. */
  rest(): Buffer {
    const rest = this.#buffer;
    this.#buffer = Buffer.alloc(0);
    return rest;
  }

  /** How many bytes are received and not handed out. */
  get length(): number {
    return this.#buffer.length;
  }
}
