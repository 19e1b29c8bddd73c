// Verifies a username and password with a bind to an LDAP directory (contract §8): over ldaps://,
// required StartTLS, or plain text to loopback; by a DN template (direct bind) or by a search as a
// service account, then a bind. The connection (connection.ts) does TLS itself and puts a frame
// guard (frame-guard.ts) between the socket and ldapts, so the verdict is the directory's answer,
// over TLS, to our own bind; one deadline covers it all and the connection is always closed. On
// ldapts: maintained, typed, no native parts, its own RFC 4515 escaper and BER writer.
import type { Client } from 'ldapts';
import { type ProbeResult, probeFailed, type VerifyResult, verifyFailed } from '../authenticator.ts';
import type { TlsOptions } from '../tls.ts';
import { withLdapConnection } from './connection.ts';
import { isUnderBase, parseDn } from './dn.ts';
import { classifyLdapError, LdapFailure, outOfProtocol } from './errors.ts';
import { escapeDnValue, escapeFilterValue, fillTemplate } from './escape.ts';
import type { LdapSettings } from './settings.ts';

type Failure = Extract<VerifyResult, { ok: false }>;

const refused = (reason: string): Failure => ({ ok: false, failure: 'bad_credentials', reason });

/** Binds as the service account; its refusal is a misconfiguration, not the user's fault (§8). */
export async function bindServiceAccount(
  client: Client,
  settings: Pick<LdapSettings, 'bindDn' | 'bindPassword'>,
): Promise<void> {
  try {
    await client.bind(settings.bindDn ?? '', settings.bindPassword ?? '');
  } catch (err) {
    const { failure, reason } = classifyLdapError(err);
    if (failure === 'upstream_unavailable') throw err;
    throw new LdapFailure('upstream_misconfigured', `service account bind refused (${reason})`);
  }
}

/** The DN to bind as: the template filled in, or the one entry under the base the service account finds. */
async function findUserDn(
  client: Client,
  settings: LdapSettings,
  username: string,
): Promise<string | Failure> {
  if (settings.userDn !== null) return fillTemplate(settings.userDn, username, escapeDnValue);
  const base = parseDn(settings.baseDn ?? '');
  if (base === null) throw outOfProtocol('LDAP_BASE_DN is not a DN');
  await bindServiceAccount(client, settings);
  // References (RFC 4511 §4.5.3) are never an entry: they are not followed, and not counted (Active
  // Directory sends some for its partitions on any search from a domain root). A referral as the
  // result (code 10) is refused by ldapts as an error, a misconfiguration.
  const { searchEntries } = await client.search(settings.baseDn ?? '', {
    scope: 'sub',
    filter: fillTemplate(settings.userFilter, username, escapeFilterValue),
    // Two are enough to know the match is ambiguous; `1.1` asks for no attributes (RFC 4511 §4.5.1.8).
    sizeLimit: 2,
    attributes: ['1.1'],
  });
  // contract §8: exactly one entry must match; none or several is a refusal like a wrong password.
  const [entry, ...others] = searchEntries;
  if (entry === undefined) return refused('no entry matches');
  if (others.length > 0) return refused('several entries match');
  // The entry must be where we asked: a DN outside the base is the directory (or whoever answers
  // for it) steering our bind elsewhere, never a bind.
  const dn = parseDn(entry.dn);
  if (dn === null) throw outOfProtocol('the entry found has a DN that does not parse');
  if (!isUnderBase(dn, base)) throw outOfProtocol('the entry found is not under LDAP_BASE_DN');
  return entry.dn;
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
  if (password === '') return refused('empty password');
  return withLdapConnection<VerifyResult>(
    settings,
    tls,
    async (client) => {
      const dn = await findUserDn(client, settings, username);
      if (typeof dn !== 'string') return dn;
      // ldapts resolves only on a BindResponse(success) to this bind's own message id, which the
      // frame guard let through only as the answer to this request, over the secured socket.
      await client.bind(dn, password);
      return { ok: true };
    },
    verifyFailed,
  );
}

/**
 * Readiness without user credentials (contract §8): connect, TLS, then bind as the service
 * account when there is one, else read the root DSE; the same connection path as a login.
 */
export function probeLdap(settings: LdapSettings, tls: TlsOptions): Promise<ProbeResult> {
  return withLdapConnection<ProbeResult>(
    settings,
    tls,
    async (client) => {
      if (settings.bindDn !== null) {
        await bindServiceAccount(client, settings);
        return { ok: true };
      }
      await client.search('', {
        scope: 'base',
        filter: '(objectClass=*)',
        attributes: ['supportedLDAPVersion'],
      });
      return { ok: true };
    },
    probeFailed,
  );
}
