// An adversarial IMAP server for tests (contract §5): a small, correct IMAP login server (greeting,
// CAPABILITY, STARTTLS with a real TLS upgrade, AUTHENTICATE PLAIN with or without SASL-IR, LOGIN
// with quoted strings and literals, ID, LOGOUT) that can play one trick of a hostile or broken
// server at a time. It records every byte it was sent and counts its open sockets, so a test can
// prove what the client sent, that the password never left, and that nothing was left open.

import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import { CrlfBuffer } from './lines.ts';
import { socketTracker } from './socket-tracker.ts';

export type Trick =
  /** None: a well-behaved server. */
  | 'none'
  /** Greets with `* PREAUTH`, as an on-path attacker would before STARTTLS. */
  | 'preauth'
  /** Answers the login with an untagged `* OK`, then says nothing more. */
  | 'untagged-ok'
  /** Answers every command with a tag the client never used (`zz9 OK`). */
  | 'foreign-tag'
  /** `* BYE` and close at the step named by `byeAt`. */
  | 'bye'
  /** STARTTLS answered `NO`. */
  | 'starttls-refused'
  /** STARTTLS answered `OK` with a plaintext line right behind it (CVE-2011-0411 class). */
  | 'starttls-injection'
  /** STARTTLS answered `OK`, then plaintext instead of a TLS handshake. */
  | 'starttls-plaintext'
  /** STARTTLS answered `OK` with a bare literal announced behind it (`{30}`), then TLS as usual. */
  | 'starttls-literal'
  /** The login answered `OKAY` (not a status: RFC 9051 resp-cond-state is "OK" SP resp-text). */
  | 'status-okay'
  /** The login answered `OK[ALERT]`, with no space after the status. */
  | 'status-glued'
  /** The login answered `OK` with the client's own tag in another case (`A3` for `a3`). */
  | 'tag-case'
  /** Asks for a synchronising literal (`+`), then never reads another byte. */
  | 'literal-never-read'
  /** Answers every command with continuation requests, without end. */
  | 'endless-continuation'
  /** A 1 MiB greeting line. */
  | 'huge-line'
  /** An untagged response that announces a 1 GB literal. */
  | 'huge-literal'
  /** Thousands of untagged lines in answer to a command. */
  | 'untagged-flood'
  /** The greeting one byte every 200 ms. */
  | 'slow-drip'
  /** Every login answered `NO [UNAVAILABLE]`. */
  | 'unavailable'
  /** Every login answered `BAD`. */
  | 'bad';

export interface HostileOptions {
  readonly trick?: Trick;
  /** The command at which `bye` strikes: GREETING, CAPABILITY, STARTTLS, AUTHENTICATE, LOGIN. */
  readonly byeAt?: string;
  /** Capabilities on the plaintext connection (default: STARTTLS AUTH=PLAIN SASL-IR LITERAL+ ID). */
  readonly caps?: string;
  /** Capabilities once TLS is up (default: `caps` without STARTTLS). */
  readonly tlsCaps?: string;
  /** Put the capabilities in the greeting's response code (default true). */
  readonly greetingCaps?: boolean;
  /** Implicit TLS from the first byte (and the certificate for STARTTLS either way). */
  readonly implicitTls?: boolean;
  readonly cert?: { certFile: string; keyFile: string };
  /** Accounts (default alice / alice-password). */
  readonly users?: Record<string, string>;
  /** Refuse quoted strings holding 8-bit bytes, as strict servers do (RFC 9051 §4.3). */
  readonly strictQuoted?: boolean;
}

export interface HostileImap {
  readonly port: number;
  /** Everything clients sent, as bytes read as UTF-8 (per connection, in order). */
  received(): string;
  /** Command lines (tag and verb) in the order they came, over all connections. */
  readonly commands: string[];
  readonly accepted: number;
  openSockets(): number;
  /** Resolves once every server-side socket has closed (or rejects after `timeoutMs`). */
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_CAPS = 'IMAP4rev1 STARTTLS AUTH=PLAIN SASL-IR LITERAL+ ID';

/** Splits a command into atoms, quoted strings and literals (already inlined by the reader). */
function parseArgs(raw: Buffer, strictQuoted: boolean): (Buffer | null)[] {
  const out: (Buffer | null)[] = [];
  let i = 0;
  while (i < raw.length) {
    if (raw[i] === 0x20) {
      i++;
    } else if (raw[i] === 0x22) {
      const bytes: number[] = [];
      for (i++; i < raw.length && raw[i] !== 0x22; i++) {
        if (raw[i] === 0x5c) i++;
        bytes.push(raw[i]!);
      }
      i++;
      // null marks an 8-bit quoted string that a strict server refuses.
      out.push(strictQuoted && bytes.some((b) => b > 0x7f) ? null : Buffer.from(bytes));
    } else if (raw[i] === 0x7b) {
      const close = raw.indexOf('}', i);
      const size = Number.parseInt(raw.subarray(i + 1, close).toString('latin1'), 10);
      const start = close + 3;
      out.push(raw.subarray(start, start + size));
      i = start + size;
    } else {
      let end = raw.indexOf(' ', i);
      if (end < 0) end = raw.length;
      out.push(raw.subarray(i, end));
      i = end;
    }
  }
  return out;
}

/** Starts the server on a free loopback port. */
export async function startHostileImap(options: HostileOptions = {}): Promise<HostileImap> {
  const trick = options.trick ?? 'none';
  const users = options.users ?? { alice: 'alice-password' };
  const caps = options.caps ?? DEFAULT_CAPS;
  const tlsCaps = options.tlsCaps ?? caps.replace(/ ?STARTTLS/, '');
  const context: SecureContext | null =
    options.cert === undefined
      ? null
      : createSecureContext({
          cert: readFileSync(options.cert.certFile),
          key: readFileSync(options.cert.keyFile),
        });
  const chunks: Buffer[] = [];
  const commands: string[] = [];
  const tracker = socketTracker();

  const serve = (raw: Socket, implicit: boolean): void => {
    let stream: Socket = raw;
    let secure = implicit;
    // Byte-exact (helpers/lines.ts): literals are counted in bytes, and STARTTLS drops what is left.
    const lines = new CrlfBuffer();
    let pending: Buffer[] = [];
    let literal = 0;
    let sasl: string | null = null;
    let deaf = false;
    const send = (text: string) => stream.write(text);
    const bye = (step: string): boolean => {
      if (trick !== 'bye' || options.byeAt !== step) return false;
      stream.end('* BYE going away\r\n');
      return true;
    };
    const capsNow = () => (secure ? tlsCaps : caps);
    const tagOf = (tag: string) => (trick === 'foreign-tag' ? 'zz9' : tag);
    const login = (tag: string, user: Buffer | null, pass: Buffer | null) => {
      if (trick === 'untagged-ok') return void send('* OK Logged in\r\n');
      if (trick === 'unavailable') return void send(`${tag} NO [UNAVAILABLE] backend down\r\n`);
      if (trick === 'bad') return void send(`${tag} BAD what\r\n`);
      if (trick === 'status-okay') return void send(`${tag} OKAY Logged in\r\n`);
      if (trick === 'status-glued') return void send(`${tag} OK[ALERT] Logged in\r\n`);
      if (trick === 'tag-case') return void send(`${tag.toUpperCase()} OK Logged in\r\n`);
      const ok = user !== null && pass !== null && users[user.toString('utf8')] === pass.toString('utf8');
      send(
        ok
          ? `${tagOf(tag)} OK [CAPABILITY IMAP4rev1] Logged in\r\n`
          : `${tagOf(tag)} NO [AUTHENTICATIONFAILED] no\r\n`,
      );
    };
    const handle = (line: Buffer): void => {
      if (sasl !== null) {
        const tag = sasl;
        sasl = null;
        const parts = Buffer.from(line.toString('latin1'), 'base64').toString('utf8').split('\0');
        login(tag, Buffer.from(parts[1] ?? ''), Buffer.from(parts[2] ?? ''));
        return;
      }
      const text = line.toString('latin1');
      const [tag = '', verbRaw = ''] = text.split(' ');
      const verb = verbRaw.toUpperCase();
      commands.push(`${tag} ${verb}`);
      if (bye(verb)) return;
      if (trick === 'endless-continuation') {
        const flood = () => {
          if (!stream.destroyed && stream.write('+ more\r\n')) setImmediate(flood);
          else if (!stream.destroyed) stream.once('drain', flood);
        };
        flood();
        return;
      }
      if (trick === 'untagged-flood') {
        for (let i = 0; i < 5000; i++) send(`* OK noise ${i}\r\n`);
      }
      if (trick === 'huge-literal') return void send('* OK {1000000000}\r\n');
      if (verb === 'CAPABILITY') {
        send(`* CAPABILITY ${capsNow()}\r\n${tagOf(tag)} OK done\r\n`);
      } else if (verb === 'STARTTLS') {
        if (trick === 'starttls-refused') return void send(`${tag} NO not now\r\n`);
        if (trick === 'starttls-injection')
          return void send(`${tag} OK Begin TLS\r\n* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] injected\r\n`);
        // One write, so the literal's announcement arrives with the OK, before the client could start TLS.
        send(`${tagOf(tag)} OK Begin TLS\r\n${trick === 'starttls-literal' ? '{30}\r\n' : ''}`);
        if (trick === 'starttls-plaintext') {
          // Deaf from here: the client's ClientHello holds CRLF often enough (2-5 in 100 handshakes)
          // for a "line" whose echoed tag would begin with the hello's own record header (16 03 01
          // and a length): a record the client would rightly wait for, ending the trick at the deadline.
          deaf = true;
          return void setTimeout(() => send('* OK not TLS at all\r\n'), 50);
        }
        if (context === null) throw new Error('STARTTLS needs options.cert');
        raw.removeAllListeners('data');
        stream = new TLSSocket(raw, { isServer: true, secureContext: context });
        stream.on('error', () => undefined);
        secure = true;
        lines.rest();
        stream.on('data', onData);
      } else if (verb === 'ID') {
        send(`* ID NIL\r\n${tagOf(tag)} OK done\r\n`);
      } else if (verb === 'AUTHENTICATE') {
        const args = text.split(' ');
        if ((args[2] ?? '').toUpperCase() !== 'PLAIN') return void send(`${tag} NO unsupported\r\n`);
        sasl = tag;
        // RFC 4959: an initial response on the command line, else a continuation asks for it.
        if (args[3] !== undefined) {
          handle(Buffer.from(args[3]));
          return;
        }
        send('+ \r\n');
      } else if (verb === 'LOGIN') {
        const [user = null, pass = null] = parseArgs(
          line.subarray(tag.length + 7),
          options.strictQuoted === true,
        );
        login(tag, user, pass);
      } else if (verb === 'LOGOUT') {
        stream.end(`* BYE bye\r\n${tagOf(tag)} OK done\r\n`);
      } else {
        send(`${tag} BAD unknown\r\n`);
      }
    };
    function onData(chunk: Buffer): void {
      chunks.push(chunk);
      if (deaf) return;
      lines.push(chunk);
      for (;;) {
        if (literal > 0) {
          const bytes = lines.take(literal);
          if (bytes === null) return;
          pending.push(bytes);
          literal = 0;
          continue;
        }
        const line = lines.line();
        if (line === null) return;
        const marker = /\{([0-9]+)(\+?)\}$/.exec(line.toString('latin1'));
        if (marker !== null) {
          pending.push(line, Buffer.from('\r\n'));
          literal = Number(marker[1]);
          if (marker[2] === '') {
            if (trick === 'literal-never-read') {
              // Reads on (so it sees the client close) but never looks at another byte.
              send('+ go ahead\r\n');
              deaf = true;
              return;
            }
            send('+ go ahead\r\n');
          }
          continue;
        }
        const whole = Buffer.concat([...pending, line]);
        pending = [];
        handle(whole);
      }
    }
    if (bye('GREETING')) return;
    const code = options.greetingCaps === false ? '' : `[CAPABILITY ${capsNow()}] `;
    const greeting =
      trick === 'preauth'
        ? '* PREAUTH [CAPABILITY IMAP4rev1] you are in\r\n'
        : trick === 'huge-line'
          ? `* OK ${'x'.repeat(1024 * 1024)}\r\n`
          : `* OK ${code}hostile ready\r\n`;
    if (trick === 'slow-drip') {
      let i = 0;
      const drip = setInterval(() => {
        if (stream.destroyed || i >= greeting.length) return clearInterval(drip);
        send(greeting[i++]!);
      }, 200);
      stream.once('close', () => clearInterval(drip));
    } else {
      send(greeting);
    }
    stream.on('data', onData);
  };

  const onSocket = (socket: Socket) => {
    tracker.add(socket);
    if (options.implicitTls === true) {
      if (context === null) throw new Error('implicitTls needs options.cert');
      const secured = new TLSSocket(socket, { isServer: true, secureContext: context });
      secured.on('error', () => undefined);
      secured.once('secure', () => serve(secured, true));
    } else {
      serve(socket, false);
    }
  };
  const server: Server = createServer(onSocket);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  return Object.assign(tracker.tracking(server), {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    received: () => Buffer.concat(chunks).toString('utf8'),
    commands,
  });
}
