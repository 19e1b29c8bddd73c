// Verifies a username and password with a bind to an LDAP directory (contract §8): over ldaps://,
// required StartTLS, or plain text to loopback; by a DN template (direct bind) or by a search as a
// service account, then a bind. One deadline covers connect, TLS and the binds; the connection is
// unbound and closed whatever happens. On ldapts: maintained, typed, no native parts, its own
// RFC 4515 escaper, and it lets us bring the TLS options (one SecureContext for every login).
import { Client, ResultCodeError } from 'ldapts';
import type { LoginFailure, ProbeResult, VerifyResult } from '../authenticator.ts';
import { type TlsOptions, tlsFailure } from '../tls.ts';
import { escapeDnValue, escapeFilterValue, fillTemplate } from './escape.ts';

export type LdapSecurity = 'tls' | 'starttls' | 'plain';

export interface LdapSettings {
  /** `ldaps://host[:636]` or `ldap://host[:389]`. */
  readonly url: string;
  readonly security: LdapSecurity;
  /** `plain` to a host that is not loopback was asked for by name. */
  readonly allowPlaintext: boolean;
  readonly caFile: string | null;
  /** Direct bind: a DN template with `{username}`; null for search-then-bind. */
  readonly userDn: string | null;
  readonly bindDn: string | null;
  readonly bindPassword: string | null;
  readonly baseDn: string | null;
  readonly userFilter: string;
  readonly timeoutMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
}

type Failure = { ok: false; failure: LoginFailure; reason: string };

const fail = (failure: LoginFailure, reason: string): Failure => ({ ok: false, failure, reason });

/** A failure with its class decided where it happened (a refused service bind is not a bad password). */
class Classified extends Error {
  override readonly name = 'Classified';
  readonly result: Failure;
  constructor(result: Failure) {
    super(result.reason);
    this.result = result;
  }
}

// RFC 4511 result codes that mean "the directory cannot answer now" (busy 51, unavailable 52),
// or that the server gave up on time (timeLimitExceeded 3, adminLimitExceeded 11).
const UNAVAILABLE_CODES = new Set([3, 11, 51, 52]);

/** Sorts an ldapts/socket error into the contract's failure classes (§8). */
export function classifyLdapError(error: unknown): { failure: LoginFailure; reason: string } {
  if (error instanceof Classified) return { failure: error.result.failure, reason: error.result.reason };
  const tls = tlsFailure(error);
  if (tls !== null) return { failure: 'upstream_misconfigured', reason: tls };
  if (error instanceof ResultCodeError) {
    if (error.code === 49) return { failure: 'bad_credentials', reason: 'LDAP invalidCredentials' };
    if (UNAVAILABLE_CODES.has(error.code))
      return { failure: 'upstream_unavailable', reason: `LDAP result ${error.code}` };
    // Anything else (confidentialityRequired, unwillingToPerform, a protocol error) is the
    // directory and us disagreeing: an operator's problem, never counted against the user.
    return { failure: 'upstream_misconfigured', reason: `LDAP result ${error.code}` };
  }
  const err = (error ?? {}) as { code?: string; message?: string };
  const reason = err.code ?? String(err.message ?? error).split('\n')[0] ?? 'error';
  return { failure: 'upstream_unavailable', reason: reason.slice(0, 200) };
}

function connect(settings: LdapSettings, tls: TlsOptions): Client {
  // ldaps:// connects to the URL's host; `host` in the options would override it (only StartTLS needs it).
  const { host: _host, ...implicitTls } = tls.options();
  return new Client({
    url: settings.url,
    // ldapts treats any tlsOptions as "implicit TLS": only ldaps:// gets them at connect time.
    tlsOptions: settings.security === 'tls' ? implicitTls : undefined,
    connectTimeout: settings.timeoutMs,
    timeout: settings.timeoutMs,
  });
}

/** StartTLS when required (never opportunistic): a refusal is a misconfiguration (§8). */
async function secure(client: Client, settings: LdapSettings, tls: TlsOptions): Promise<void> {
  if (settings.security !== 'starttls') return;
  try {
    await client.startTLS(tls.options());
  } catch (err) {
    if (err instanceof ResultCodeError) {
      throw new Classified(fail('upstream_misconfigured', `StartTLS refused: LDAP result ${err.code}`));
    }
    throw err;
  }
}

/** Runs `work` on a fresh connection within the deadline; the connection is always unbound and closed. */
async function withConnection<T>(
  settings: LdapSettings,
  tls: TlsOptions,
  work: (client: Client) => Promise<T>,
  onError: (error: unknown) => T,
  onTimeout: () => T,
): Promise<T> {
  const client = connect(settings, tls);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(onTimeout()), settings.timeoutMs);
  });
  try {
    return await Promise.race([
      (async () => {
        await secure(client, settings, tls);
        return work(client);
      })().catch(onError),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
    // unbind() sends UnbindRequest when connected and destroys the socket in every case.
    await client.unbind().catch(() => undefined);
  }
}

/** The DN to bind as: the template filled in, or the one entry the service account finds. */
async function findUserDn(
  client: Client,
  settings: LdapSettings,
  username: string,
): Promise<string | Failure> {
  if (settings.userDn !== null) return fillTemplate(settings.userDn, username, escapeDnValue);
  try {
    await client.bind(settings.bindDn ?? '', settings.bindPassword ?? '');
  } catch (err) {
    const { failure, reason } = classifyLdapError(err);
    // contract §8: a refused service-account bind is a misconfiguration, not the user's fault.
    if (failure === 'upstream_unavailable') throw err;
    throw new Classified(fail('upstream_misconfigured', `service account bind refused (${reason})`));
  }
  const { searchEntries } = await client.search(settings.baseDn ?? '', {
    scope: 'sub',
    filter: fillTemplate(settings.userFilter, username, escapeFilterValue),
    // Two are enough to know the match is ambiguous; `1.1` asks for no attributes (RFC 4511 §4.5.1.8).
    sizeLimit: 2,
    attributes: ['1.1'],
  });
  // contract §8: exactly one entry must match; none or several is a refusal like a wrong password.
  if (searchEntries.length === 0) return fail('bad_credentials', 'no entry matches');
  if (searchEntries.length > 1) return fail('bad_credentials', 'several entries match');
  return searchEntries[0]?.dn ?? fail('bad_credentials', 'no entry matches');
}

/** One LDAP login with a single deadline over connect, TLS and the binds. */
export async function ldapLoginOnce(
  settings: LdapSettings,
  tls: TlsOptions,
  username: string,
  password: string,
): Promise<VerifyResult> {
  // RFC 4513 §5.1.2: a simple bind with an empty password is an unauthenticated bind, which
  // succeeds; contract §8: it never reaches the directory.
  if (password === '') return fail('bad_credentials', 'empty password');
  return withConnection<VerifyResult>(
    settings,
    tls,
    async (client) => {
      const dn = await findUserDn(client, settings, username);
      if (typeof dn !== 'string') return dn;
      await client.bind(dn, password);
      return { ok: true };
    },
    (err) => ({ ok: false, ...classifyLdapError(err) }),
    () => fail('upstream_unavailable', `no answer within ${settings.timeoutMs} ms`),
  );
}

/**
 * Readiness without user credentials (contract §8): connect, TLS, then bind as the service
 * account when there is one, else read the root DSE.
 */
export function probeLdap(settings: LdapSettings, tls: TlsOptions): Promise<ProbeResult> {
  return withConnection<ProbeResult>(
    settings,
    tls,
    async (client) => {
      if (settings.bindDn !== null) {
        try {
          await client.bind(settings.bindDn, settings.bindPassword ?? '');
        } catch (err) {
          const { failure, reason } = classifyLdapError(err);
          return { ok: false, reason: `service account bind refused: ${failure}: ${reason}` };
        }
        return { ok: true };
      }
      await client.search('', {
        scope: 'base',
        filter: '(objectClass=*)',
        attributes: ['supportedLDAPVersion'],
      });
      return { ok: true };
    },
    (err) => {
      const { failure, reason } = classifyLdapError(err);
      return { ok: false, reason: `${failure}: ${reason}` };
    },
    () => ({ ok: false, reason: `no answer within ${settings.timeoutMs} ms` }),
  );
}
