// Counts a scripted test server's sockets, so tests can prove nothing is left open (fake-imap.ts,
// hostile-imap.ts): accepted so far, open now, wait until all are closed, and close everything.
import { once } from 'node:events';
import type { Server, Socket } from 'node:net';

export interface SocketTracking {
  /** Sockets accepted so far. */
  readonly accepted: number;
  openSockets(): number;
  /** Resolves once every socket is closed; rejects after `timeoutMs`. */
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Tracks `socket` from its acceptance to its close; `tracking(server)` answers for all of them. */
export function socketTracker(): {
  add(socket: Socket): void;
  tracking(server: Server): SocketTracking;
} {
  const sockets = new Set<Socket>();
  let accepted = 0;
  return {
    add(socket) {
      accepted++;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    },
    tracking: (server) => ({
      get accepted() {
        return accepted;
      },
      openSockets: () => sockets.size,
      async drained(timeoutMs = 5000) {
        const until = Date.now() + timeoutMs;
        while (sockets.size > 0) {
          if (Date.now() > until) throw new Error(`${sockets.size} sockets still open`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
      async close() {
        for (const socket of sockets) socket.destroy();
        server.close();
        await once(server, 'close');
      },
    }),
  };
}
