// What the verify-only IMAP client writes (contract §5): the login command as
// AUTHENTICATE PLAIN (RFC 4616, SASL-IR per RFC 4959) or LOGIN with quoted strings and literals
// (RFC 9051 §4.3, LITERAL+/- per RFC 7888), the ID command, and how capabilities are read.

/** LITERAL- (RFC 7888): non-synchronising literals up to 4096 bytes. */
const LITERAL_MINUS_MAX = 4096;

/** Capabilities from a `CAPABILITY …` response or an `OK [CAPABILITY …]` code; null when none. */
export function capabilitiesOf(text: string): Set<string> | null {
  const match = /^(?:OK \[CAPABILITY ([^\]]*)\]|CAPABILITY (.*))/i.exec(text);
  const list = match?.[1] ?? match?.[2];
  return list === undefined
    ? null
    : new Set(
        list
          .toUpperCase()
          .split(' ')
          .filter((c) => c !== ''),
      );
}

/** An IMAP astring: quoted when plain printable ASCII, else a literal (contract §5). */
function astring(value: string, caps: Set<string>): { text: Buffer; sync: boolean } {
  if (/^[\x20-\x7e]*$/.test(value)) {
    return { text: Buffer.from(`"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`), sync: false };
  }
  const bytes = Buffer.from(value, 'utf8');
  // RFC 7888: LITERAL+ allows any non-synchronising literal, LITERAL- only up to 4096 bytes.
  const plus = caps.has('LITERAL+') || (caps.has('LITERAL-') && bytes.length <= LITERAL_MINUS_MAX);
  return plus
    ? { text: Buffer.concat([Buffer.from(`{${bytes.length}+}\r\n`), bytes]), sync: false }
    : { text: Buffer.concat([Buffer.from(`{${bytes.length}}\r\n`), bytes]), sync: true };
}

/** The login command's segments: AUTHENTICATE PLAIN when offered, else LOGIN with literals. */
export function loginSegments(caps: Set<string>, username: string, password: string): Buffer[] {
  if (caps.has('AUTH=PLAIN')) {
    // RFC 4616: authzid (empty) NUL authcid NUL passwd, UTF-8, base64 on the wire.
    const response = Buffer.from(`\0${username}\0${password}`, 'utf8').toString('base64');
    // RFC 4959: with SASL-IR the response rides on the command, saving a round trip.
    return caps.has('SASL-IR')
      ? [Buffer.from(`AUTHENTICATE PLAIN ${response}\r\n`)]
      : [Buffer.from('AUTHENTICATE PLAIN\r\n'), Buffer.from(`${response}\r\n`)];
  }
  const segments: Buffer[] = [];
  let current: Buffer = Buffer.from('LOGIN');
  for (const value of [username, password]) {
    const { text, sync } = astring(value, caps);
    if (sync) {
      // The literal's bytes go only after the server's `+` (RFC 9051 §4.3).
      const header = text.indexOf('\r\n') + 2;
      segments.push(Buffer.concat([current, Buffer.from(' '), text.subarray(0, header)]));
      current = text.subarray(header);
    } else {
      current = Buffer.concat([current, Buffer.from(' '), text]);
    }
  }
  segments.push(Buffer.concat([current, Buffer.from('\r\n')]));
  return segments;
}

/** ID (RFC 2971) with the client's address, for the mail server's own brute-force penalties. */
export function idCommand(clientIp: string): Buffer {
  return Buffer.from(`ID ("name" "clubhouse" "x-originating-ip" ${quoted(clientIp)})\r\n`);
}

function quoted(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, '').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
