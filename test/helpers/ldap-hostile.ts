// A hostile directory for tests (contract §8): a TLS-terminating relay in front of a real slapd. It
// holds a certificate the test trusts (its CA is the client's LDAP_CA_FILE), so it reads and
// rewrites inside TLS what no on-path attacker could: it plays one trick of a hostile or broken
// directory at a time on the answers, and relays everything else to slapd's ldap:// listener and
// back. It speaks ldaps:// or answers StartTLS itself, records every request it was sent, and
// counts its open sockets, so a test can prove which binds were sent and that nothing was left open.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';
import type { TestCertificates } from './certs.ts';
import {
  bindName,
  bindResponse,
  extendedResponse,
  type Frame,
  FrameSplitter,
  noticeOfDisconnection,
  OP,
  STARTTLS_OID,
  searchResultDone,
  searchResultEntry,
  searchResultReference,
} from './ldap-ber.ts';
import { type SocketTracking, socketTracker } from './socket-tracker.ts';

export type LdapTrick =
  /** None: relays faithfully (the control). */
  | 'none'
  /** The target bind answered `success` for another message id (its own + 1). */
  | 'foreign-id'
  /** The target bind answered `success` with message id 0. */
  | 'id-zero'
  /** An unsolicited Notice of Disconnection instead of the target bind's answer; the socket stays open. */
  | 'notice'
  /** The target bind answered with a referral (result 10) to another server. */
  | 'referral'
  /** The target bind answered with a SearchResultDone(success) for its id. */
  | 'wrong-op'
  /** Bytes that are no LDAP message instead of the target bind's answer. */
  | 'garbage'
  /** A message header announcing 2 GiB instead of the target bind's answer. */
  | 'oversize'
  /** The target bind answered `success` in BER's indefinite length form (RFC 4511 §5.1 forbids it). */
  | 'indefinite'
  /** The user search answered with a second entry under the base. */
  | 'two-entries'
  /** The user search's entry moved to `dn` (outside the base). */
  | 'outside-base'
  /** The user search answered with a continuation reference instead of its entry. */
  | 'reference'
  /** The user search ended with result 10 (referral) instead of its entry and success. */
  | 'search-referral'
  /** A `success` for the next bind's predicted id, in the same write as the search's end. */
  | 'early-answer'
  /** A `success` for the next bind's predicted id as soon as the search request arrives. */
  | 'answer-on-search';

export interface HostileLdapOptions {
  readonly trick?: LdapTrick;
  /** Which bind the bind tricks strike: the user's (default) or the service account's. */
  readonly target?: 'user' | 'service';
  /** The service account's DN, which tells its bind from the user's. */
  readonly serviceDn: string;
  /** The DN `outside-base` puts in the entry. */
  readonly dn?: string;
  /** Answer StartTLS on a plaintext listener (default: implicit TLS). */
  readonly starttls?: boolean;
  readonly cert: TestCertificates;
}

/** A request the hostile directory received: message id, protocolOp, and a bind's name. */
export interface SeenRequest {
  readonly id: number;
  readonly op: number;
  readonly name?: string;
}

export interface HostileLdap extends SocketTracking {
  readonly port: number;
  /** Every request received over TLS, over all connections, in order. */
  readonly requests: SeenRequest[];
  /** The names of the binds received. */
  binds(): string[];
}

/** Starts the hostile directory on a free loopback port in front of slapd at 127.0.0.1:`slapdPort`. */
export async function startHostileLdap(slapdPort: number, options: HostileLdapOptions): Promise<HostileLdap> {
  const trick = options.trick ?? 'none';
  const context = createSecureContext({
    cert: readFileSync(options.cert.certFile),
    key: readFileSync(options.cert.keyFile),
  });
  const tracker = socketTracker();
  const upstreams = new Set<net.Socket>();
  const requests: SeenRequest[] = [];

  const serve = (client: TLSSocket) => {
    const upstream = net.connect({ host: '127.0.0.1', port: slapdPort });
    upstreams.add(upstream);
    upstream.on('close', () => upstreams.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    let serviceBound = false;
    let userSearch = -1;

    const isTarget = (request: SeenRequest) =>
      request.op === OP.bindRequest &&
      (request.name === options.serviceDn) === (options.target === 'service');

    /** The answer the trick gives to the target bind in place of slapd's, or null to relay it. */
    const forgedBindAnswer = (id: number): Buffer | null => {
      if (trick === 'foreign-id') return bindResponse(id + 1, 0);
      if (trick === 'id-zero') return bindResponse(0, 0);
      if (trick === 'notice') return noticeOfDisconnection();
      if (trick === 'referral') return bindResponse(id, 10, ['ldap://elsewhere.example/']);
      if (trick === 'wrong-op') return searchResultDone(id, 0);
      if (trick === 'garbage') return Buffer.from('HTTP/1.1 200 OK\r\n\r\n');
      if (trick === 'oversize') return Buffer.from([0x30, 0x84, 0x7f, 0xff, 0xff, 0xff, 0x02, 0x01, id]);
      if (trick === 'indefinite')
        return Buffer.concat([Buffer.from([0x30, 0x80]), bindResponse(id, 0).subarray(2), Buffer.alloc(2)]);
      return null;
    };

    const requestsIn = new FrameSplitter();
    client.on('data', (chunk: Buffer) => {
      for (const frame of requestsIn.push(chunk)) {
        const seen: SeenRequest =
          frame.op === OP.bindRequest
            ? { id: frame.id, op: frame.op, name: bindName(frame) }
            : { id: frame.id, op: frame.op };
        requests.push(seen);
        if (seen.name === options.serviceDn) serviceBound = true;
        if (isTarget(seen)) {
          const forged = forgedBindAnswer(frame.id);
          if (forged !== null) {
            client.write(forged);
            continue;
          }
        }
        // The user's search is the one a service account sends (the probe reads the root DSE).
        if (frame.op === OP.searchRequest && serviceBound) {
          userSearch = frame.id;
          if (trick === 'answer-on-search') client.write(bindResponse(frame.id + 1, 0));
        }
        upstream.write(frame.bytes);
      }
    });

    /** What the client gets in place of slapd's `frame`. */
    const rewrite = (frame: Frame): Buffer => {
      if (frame.id !== userSearch) return frame.bytes;
      if (frame.op === OP.searchResultEntry) {
        if (trick === 'two-entries')
          return Buffer.concat([
            frame.bytes,
            searchResultEntry(frame.id, `uid=twin,ou=alumni,ou=people,dc=example,dc=org`),
          ]);
        if (trick === 'outside-base') return searchResultEntry(frame.id, options.dn ?? '');
        if (trick === 'reference')
          return searchResultReference(frame.id, 'ldap://elsewhere.example/dc=example,dc=org');
        if (trick === 'search-referral') return Buffer.alloc(0);
      }
      if (frame.op === OP.searchResultDone) {
        if (trick === 'search-referral') return searchResultDone(frame.id, 10);
        if (trick === 'early-answer') return Buffer.concat([frame.bytes, bindResponse(frame.id + 1, 0)]);
      }
      return frame.bytes;
    };
    const answers = new FrameSplitter();
    upstream.on('data', (chunk: Buffer) => {
      const out = answers.push(chunk).map(rewrite);
      // One write: what a trick adds travels in the same TLS record as the answer it rides on.
      if (out.length > 0) client.write(Buffer.concat(out));
    });
  };

  const server = net.createServer((raw) => {
    tracker.add(raw);
    const secure = () => {
      const tls = new TLSSocket(raw, { isServer: true, secureContext: context });
      tls.on('error', () => raw.destroy());
      tls.once('secure', () => serve(tls));
    };
    if (options.starttls !== true) return secure();
    // StartTLS answered here: the one request read whole, then TLS on the same socket.
    const first = new FrameSplitter();
    const onData = (chunk: Buffer) => {
      const [frame] = first.push(chunk);
      if (frame === undefined) return;
      raw.off('data', onData);
      if (frame.op !== OP.extendedRequest || !frame.bytes.includes(Buffer.from(STARTTLS_OID)))
        return void raw.destroy();
      raw.write(extendedResponse(frame.id, 0, STARTTLS_OID));
      secure();
    };
    raw.on('data', onData);
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
    requests,
    binds: () => requests.filter((r) => r.op === OP.bindRequest).map((r) => r.name ?? ''),
  };
}
