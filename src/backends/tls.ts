// TLS for a backend's connections (contract §5, §8): certificates always verified, a CA file added
// to the system roots, TLS 1.2 at least, and the host name checked, including after StartTLS.
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { type ConnectionOptions, createSecureContext, rootCertificates, type SecureContext } from 'node:tls';

export interface TlsOptions {
  /** Fresh options per connection (ldapts writes the socket into them on StartTLS). */
  options(): ConnectionOptions;
}

/**
 * Built once, at the first connection that needs it: a context per connection would parse every
 * root certificate per login, and one built up front costs a plain-text connection (a loopback
 * directory, the group sync's bench) 25-50 ms of CPU for nothing. The CA file is read at once, so
 * that a missing one fails where it is configured.
 */
export function backendTls(host: string, caFile: string | null): TlsOptions {
  const ca = [...rootCertificates];
  if (caFile !== null) ca.push(readFileSync(caFile, 'utf8'));
  let secureContext: SecureContext | undefined;
  const bare = host.replace(/^\[|\]$/g, '');
  return {
    options() {
      secureContext ??= createSecureContext({ ca, minVersion: 'TLSv1.2' });
      const options: ConnectionOptions = {
        rejectUnauthorized: true,
        minVersion: 'TLSv1.2',
        secureContext,
        // The name checked against the certificate, also when upgrading an existing socket.
        host: bare,
      };
      if (isIP(bare) === 0) options.servername = bare;
      return options;
    },
  };
}

const TLS_ERROR_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
]);

/** "TLS: CODE" when `error` is a certificate or handshake failure (a misconfiguration), else null. */
export function tlsFailure(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  if (TLS_ERROR_CODES.has(code) || code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS'))
    return `TLS: ${code}`;
  return null;
}
