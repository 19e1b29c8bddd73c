// How clubhouse reaches PostgreSQL over TLS (docs/operations.md: TLS to the stores). libpq's
// `sslmode` words, read strictly: TLS that is not asked for is off, TLS that is asked for is never
// silently downgraded, and a server is trusted without verification only when `sslmode=require` says
// so by name. pg's own reading of these words differs by version (`require` verifies in pg 8, not in
// libpq), so clubhouse removes them from the URL, and the store hands pg an explicit `ssl` option
// instead (store/postgres/driver.ts).
import type { PostgresSslMode, PostgresTarget } from '../../store/options.ts';

export type PostgresTlsResult =
  | { readonly ok: true; readonly tls: PostgresTarget }
  | { readonly ok: false; readonly variable: string; readonly message: string };

const MODES: readonly PostgresSslMode[] = ['disable', 'require', 'verify-full'];
// `ssl` and `uselibpqcompat` are pg's own spellings; they would bypass the rules below.
const SSL_PARAMETERS = ['sslmode', 'sslrootcert', 'ssl', 'uselibpqcompat'];
const UNSUPPORTED = ['sslcert', 'sslkey', 'sslpassword', 'sslcrl', 'sslnegotiation'];

/** Reads the TLS wishes of a postgres:// URL and DATABASE_CA_FILE; a contradiction is an error. */
export function parsePostgresTls(databaseUrl: string, databaseCaFile: string | null): PostgresTlsResult {
  const fail = (variable: string, message: string) => ({ ok: false, variable, message }) as const;
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return fail('DATABASE_URL', 'is not a URL like postgres://user@host/database');
  }
  const params = url.searchParams;
  for (const name of UNSUPPORTED) {
    if (params.has(name)) return fail('DATABASE_URL', `${name} is not supported`);
  }
  if (params.has('ssl') || params.has('uselibpqcompat')) {
    return fail('DATABASE_URL', 'use sslmode=verify-full (or require), not ssl=… or uselibpqcompat');
  }
  const rootCert = params.get('sslrootcert');
  if (rootCert !== null && databaseCaFile !== null) {
    return fail('DATABASE_CA_FILE', 'set either DATABASE_CA_FILE or sslrootcert in DATABASE_URL, not both');
  }
  // libpq 16: sslrootcert=system means the system's roots.
  const caFile = rootCert === 'system' ? null : (rootCert ?? databaseCaFile);
  const given = params.get('sslmode');
  // A CA with no sslmode: the operator wants the server verified.
  const mode = given ?? (caFile !== null ? 'verify-full' : 'disable');
  const known = MODES.find((candidate) => candidate === mode);
  if (known === undefined) {
    // allow/prefer fall back to plaintext when TLS fails: a silent downgrade. verify-ca
    // trusts any certificate the CA ever signed, for any host: say verify-full instead.
    return fail(
      'DATABASE_URL',
      `sslmode=${mode} is not supported: use verify-full (verifies the server), require (TLS, no verification) or disable`,
    );
  }
  if (caFile !== null && (known === 'disable' || known === 'require')) {
    return fail(
      rootCert === null ? 'DATABASE_CA_FILE' : 'DATABASE_URL',
      `a CA is given but sslmode=${known} does not verify with it: use sslmode=verify-full`,
    );
  }
  for (const name of SSL_PARAMETERS) params.delete(name);
  return { ok: true, tls: { url: url.toString(), mode: known, caFile } };
}
