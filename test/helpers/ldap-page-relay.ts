// A relay in front of a real slapd's ldap:// listener (plain text, loopback) that breaks a paged
// search midway (contract §11: a directory error, a timeout or a limit midway changes nothing). It
// passes every byte untouched until the directory has answered `afterPages` SearchResultDone
// messages (pages), then: `stall` forwards nothing more either way (the directory stops answering),
// `fail` answers the next page's SearchResultDone with `code` instead of the directory's (a page
// fails; its entries still pass), `cut` resets the connection.
import { once } from 'node:events';
import net from 'node:net';
import { FrameSplitter, OP, searchResultDone } from './ldap-ber.ts';

export type PageFault =
  | { readonly kind: 'none' }
  | { readonly kind: 'stall'; readonly afterPages: number }
  | { readonly kind: 'fail'; readonly afterPages: number; readonly code: number }
  | { readonly kind: 'cut'; readonly afterPages: number };

export interface PageRelay {
  readonly port: number;
  setFault(fault: PageFault): void;
  /** Pages (SearchResultDone messages) the directory answered, over every connection. */
  pages(): number;
  close(): Promise<void>;
}

export async function startPageRelay(targetPort: number): Promise<PageRelay> {
  let fault: PageFault = { kind: 'none' };
  let pages = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    // Per connection: pages counted from its own first search.
    let seen = 0;
    let stalled = false;
    client.on('data', (chunk: Buffer) => {
      if (!stalled) upstream.write(chunk);
    });
    const answers = new FrameSplitter();
    upstream.on('data', (chunk: Buffer) => {
      if (stalled) return;
      for (const frame of answers.push(chunk)) {
        if (frame.op !== OP.searchResultDone) {
          client.write(frame.bytes);
          continue;
        }
        pages++;
        const current = fault;
        if (current.kind !== 'none' && seen >= current.afterPages) {
          if (current.kind === 'stall') {
            stalled = true;
            return;
          }
          if (current.kind === 'cut') {
            client.resetAndDestroy();
            upstream.destroy();
            return;
          }
          client.write(searchResultDone(frame.id, current.code));
          seen++;
          continue;
        }
        seen++;
        client.write(frame.bytes);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    setFault(next) {
      fault = next;
    },
    pages: () => pages,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
