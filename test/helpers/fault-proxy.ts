// A TCP fault proxy for tests: put between the service and Dovecot, PostgreSQL or Redis, it passes
// bytes through, or delays every chunk, stalls (accepts and forwards nothing), resets connections on
// their next chunk, or cuts everything and refuses new connections. It counts what is open.
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

export type Fault =
  | { readonly kind: 'none' }
  /** Every chunk, both ways, waits this long. */
  | { readonly kind: 'delay'; readonly ms: number }
  /** New connections are accepted but nothing is forwarded either way. */
  | { readonly kind: 'stall' }
  /** Each connection is reset when the client next sends something. */
  | { readonly kind: 'reset-on-data' }
  /** A connection is reset when the client sends bytes containing `text` (plain protocols only). */
  | { readonly kind: 'reset-when'; readonly text: string }
  /** Open connections are destroyed and new ones refused (the listener stays, answering with RST). */
  | { readonly kind: 'cut' };

export interface FaultProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Client-side sockets open now. */
  openConnections(): number;
  setFault(fault: Fault): void;
  close(): Promise<void>;
}

/** Starts a proxy on a free loopback port forwarding to `targetPort`. */
export async function startFaultProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
  let fault: Fault = { kind: 'none' };
  let accepted = 0;
  const pairs = new Set<{ client: Socket; upstream: Socket | null }>();

  const pipe = (from: Socket, to: Socket, pair: { client: Socket }) => {
    from.on('data', (chunk: Buffer) => {
      const current = fault;
      if (current.kind === 'stall') return;
      const resetNow =
        from === pair.client &&
        (current.kind === 'reset-on-data' || (current.kind === 'reset-when' && chunk.includes(current.text)));
      if (resetNow) {
        pair.client.resetAndDestroy();
        to.destroy();
        return;
      }
      if (current.kind === 'delay') {
        from.pause();
        setTimeout(() => {
          if (!to.destroyed) to.write(chunk);
          from.resume();
        }, current.ms);
        return;
      }
      if (!to.destroyed) to.write(chunk);
    });
    from.on('end', () => to.end());
  };

  const server: Server = createServer((client) => {
    accepted++;
    if (fault.kind === 'cut') {
      client.resetAndDestroy();
      return;
    }
    const pair: { client: Socket; upstream: Socket | null } = { client, upstream: null };
    pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      pairs.delete(pair);
      pair.upstream?.destroy();
    });
    const upstream = connect(targetPort, targetHost);
    pair.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => client.destroy());
    pipe(client, upstream, pair);
    pipe(upstream, client, pair);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    get accepted() {
      return accepted;
    },
    openConnections: () => pairs.size,
    setFault(next) {
      fault = next;
      if (next.kind === 'cut') {
        for (const pair of pairs) {
          pair.client.resetAndDestroy();
          pair.upstream?.destroy();
        }
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      server.close();
      await once(server, 'close');
    },
  };
}
