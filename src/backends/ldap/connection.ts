// One LDAP attempt's connection (contract §8): TCP, then TLS (implicit for ldaps://, StartTLS done
// by starttls.ts, never opportunistic) or plain text where configured, then the frame guard, and
// only then ldapts, handed the guard's end through its documented `createConnection` option, so
// its parser never sees a byte from before TLS nor an answer the guard did not vet. One deadline
// covers connect, TLS and the work, over one connection (a login) or several (the group sync reads
// on two at once); a sound connection is unbound, and every socket is destroyed whatever happens.
import { connect as netConnect, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { connect as tlsConnect } from 'node:tls';
import { Client } from 'ldapts';
import type { BackendFailure } from '../authenticator.ts';
import { withinDeadline } from '../deadline.ts';
import type { TlsOptions } from '../tls.ts';
import { classifyLdapError, LdapFailure } from './errors.ts';
import { type FrameGuard, guardFrames } from './frame-guard.ts';
import type { LdapSecurity } from './settings.ts';
import { startTls } from './starttls.ts';

/** What a connection needs of the LDAP settings. */
export interface LdapEndpoint {
  /** `ldaps://host[:636]` or `ldap://host[:389]`. */
  readonly url: string;
  readonly security: LdapSecurity;
  readonly timeoutMs: number;
  /** The largest answer the frame guard lets through (default: a login's, ber.ts). */
  readonly maxMessageBytes?: number;
}

/** Resolves once `socket` emits `event`; rejects on its error, or its close before that. */
function once(socket: Socket, event: 'connect' | 'secureConnect', closed: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stop = () => {
      socket.off(event, onEvent);
      socket.off('error', onError);
      socket.off('close', onClose);
    };
    const onEvent = () => {
      stop();
      resolve();
    };
    const onError = (err: Error) => {
      stop();
      reject(err);
    };
    const onClose = () => {
      stop();
      reject(new LdapFailure('upstream_unavailable', closed));
    };
    socket.on(event, onEvent);
    socket.on('error', onError);
    socket.on('close', onClose);
  });
}

/**
 * Connects and secures as configured; each socket made is pushed to `made` at once, so the
 * caller can destroy it even if the deadline strikes midway.
 */
async function secureSocket(endpoint: LdapEndpoint, tls: TlsOptions, made: Socket[]): Promise<Socket> {
  const url = new URL(endpoint.url);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? (url.protocol === 'ldaps:' ? 636 : 389) : Number(url.port);
  if (endpoint.security === 'tls') {
    // Straight to TLS (a TCP socket handed to TLS once connected measured ~15% more CPU per login);
    // the URL's host is connected to, the certificate checked against the options' name (tls.ts).
    const implicit = tlsConnect({ ...tls.options(), host, port });
    made.push(implicit);
    await once(implicit, 'secureConnect', 'connection closed during TLS');
    return implicit;
  }
  const raw = netConnect({ host, port });
  made.push(raw);
  // Once TLS holds this socket its failures are read from the TLS socket; an 'error' event left
  // without a listener here would end the process.
  raw.on('error', () => undefined);
  await once(raw, 'connect', 'connection closed while connecting');
  if (endpoint.security === 'plain') return raw;
  const secure = await startTls(raw, tls.options());
  made.push(secure);
  await once(secure, 'secureConnect', 'connection closed during TLS');
  return secure;
}

/** ldapts over the guard: both of its connection factories return the guard's end, already open. */
function ldaptsOver(guard: FrameGuard, url: string): Client {
  const stream = guard.stream as unknown as TLSSocket;
  return new Client({ url, createConnection: () => stream, createSecureConnection: () => stream });
}

/** One secured, guarded connection: ldapts over the guard, and the guard for requests of our own. */
export interface LdapConnection {
  readonly client: Client;
  readonly guard: FrameGuard;
}

/**
 * Runs `work` on `count` fresh, secured, guarded connections (the group sync reads on two at once)
 * within one deadline; `failed` makes the answer for a failure. A failure any guard saw wins over
 * whatever ldapts (or our own reading) made of it, and ends the whole attempt.
 */
export async function withLdapConnections<T>(
  endpoint: LdapEndpoint,
  tls: TlsOptions,
  count: number,
  work: (connections: readonly LdapConnection[]) => Promise<T>,
  failed: (failure: BackendFailure, reason: string) => T,
): Promise<T> {
  const sockets: Socket[] = [];
  const guards: FrameGuard[] = [];
  const refused = () => guards.find((guard) => guard.failure() !== null)?.failure() ?? null;
  const attempt = async () => {
    const connections = await Promise.all(
      Array.from({ length: count }, async () => {
        const guard = guardFrames(await secureSocket(endpoint, tls, sockets), endpoint.maxMessageBytes);
        guards.push(guard);
        return { client: ldaptsOver(guard, endpoint.url), guard };
      }),
    );
    const answer = await Promise.race([work(connections), ...guards.map((guard) => guard.ended)]);
    // The guard vets a whole read before passing any of it, so no refusal can trail the answer it
    // came with; still, a verdict stands only while no guard has refused anything.
    const failure = refused();
    if (failure !== null) throw failure;
    return answer;
  };
  return withinDeadline(endpoint.timeoutMs, attempt, {
    classify: (err) => classifyLdapError(refused() ?? err),
    failed,
    release: async () => {
      await Promise.all(guards.map((guard) => guard.close()));
      for (const socket of sockets) socket.destroy();
    },
  });
}

/** withLdapConnections with one connection, handed to `work` as ldapts (a login, a probe). */
export function withLdapConnection<T>(
  endpoint: LdapEndpoint,
  tls: TlsOptions,
  work: (client: Client) => Promise<T>,
  failed: (failure: BackendFailure, reason: string) => T,
): Promise<T> {
  return withLdapConnections(
    endpoint,
    tls,
    1,
    ([connection]) => work((connection as LdapConnection).client),
    failed,
  );
}
