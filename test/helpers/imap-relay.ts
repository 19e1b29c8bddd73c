// An on-path attacker between the service and a real IMAP server (docs/security.md: forged
// greetings): it can replace the server's greeting (a forged `* PREAUTH` before STARTTLS) and rewrite
// the plaintext the server sends (hide capabilities), then relays every other byte untouched, TLS
// included, so the certificate the client sees is the real server's and verifies.
import { once } from 'node:events';
import net from 'node:net';
import { CrlfBuffer } from './lines.ts';

export interface RelayOptions {
  /** The line (without CRLF) sent to the client in place of the server's greeting. */
  readonly greeting?: string;
  /** Applied to each plaintext chunk from the server (only on connections that never start TLS). */
  readonly rewrite?: (text: string) => string;
}

export interface ImapRelay {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Client-side sockets still open. */
  openSockets(): number;
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts a relay on a free loopback port in front of 127.0.0.1:`targetPort`. */
export async function startImapRelay(targetPort: number, options: RelayOptions = {}): Promise<ImapRelay> {
  const clients = new Set<net.Socket>();
  const all = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted++;
    clients.add(client);
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, upstream]) {
      all.add(socket);
      socket.once('close', () => {
        all.delete(socket);
        clients.delete(socket);
      });
    }
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    let greeted = options.greeting === undefined;
    // The greeting line is replaced; whatever came behind it is relayed as it came.
    const greeting = new CrlfBuffer();
    upstream.on('data', (chunk: Buffer) => {
      if (!greeted) {
        greeting.push(chunk);
        if (greeting.line() === null) return;
        greeted = true;
        client.write(`${options.greeting}\r\n`);
        const rest = greeting.rest();
        if (rest.length > 0) client.write(rest);
        return;
      }
      // A TLS record starts with 0x14-0x17; anything else is still the plaintext phase.
      const plaintext = chunk[0] !== undefined && (chunk[0] < 0x14 || chunk[0] > 0x17);
      client.write(
        plaintext && options.rewrite !== undefined
          ? Buffer.from(options.rewrite(chunk.toString('latin1')), 'latin1')
          : chunk,
      );
    });
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    get accepted() {
      return accepted;
    },
    openSockets: () => clients.size,
    async drained(timeoutMs = 5000) {
      const until = Date.now() + timeoutMs;
      while (clients.size > 0) {
        if (Date.now() > until) throw new Error(`${clients.size} relayed connections still open`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close() {
      for (const socket of all) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
