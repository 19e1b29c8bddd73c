// What ends an LDAP attempt, and its failure class (contract §8): a refusal decided by a rule of
// ours (StartTLS, the frame guard, the search's answer) carries its class; an ldapts result error
// or a socket error is sorted here, in one place.
import { MessageParserError, ResultCodeError } from 'ldapts';
import type { BackendFailure } from '../authenticator.ts';
import { tlsFailure } from '../tls.ts';

/** An attempt ended where its class was decided (a refused service bind is not a bad password). */
export class LdapFailure extends Error {
  override readonly name = 'LdapFailure';
  readonly failure: BackendFailure;
  constructor(failure: BackendFailure, reason: string) {
    super(reason);
    this.failure = failure;
  }
}

/** The directory broke the protocol or answered out of what was asked: an operator's problem. */
export const outOfProtocol = (reason: string): LdapFailure =>
  new LdapFailure('upstream_misconfigured', reason);

// RFC 4511 result codes that mean "the directory cannot answer now" (busy 51, unavailable 52),
// or that the server gave up on time (timeLimitExceeded 3, adminLimitExceeded 11).
const UNAVAILABLE_CODES = new Set([3, 11, 51, 52]);

/** An LDAPResult's code other than success, as the failure it is (ldapts's answers and our own searches'). */
export function resultCodeFailure(code: number): LdapFailure {
  if (code === 49) return new LdapFailure('bad_credentials', 'LDAP invalidCredentials');
  if (UNAVAILABLE_CODES.has(code)) return new LdapFailure('upstream_unavailable', `LDAP result ${code}`);
  // Anything else (confidentialityRequired, unwillingToPerform, a referral, a protocol error) is
  // the directory and us disagreeing: an operator's problem, never counted against the user.
  return new LdapFailure('upstream_misconfigured', `LDAP result ${code}`);
}

/** Sorts an error that ended an attempt into the contract's failure classes (§8). */
export function classifyLdapError(error: unknown): { failure: BackendFailure; reason: string } {
  if (error instanceof LdapFailure) return { failure: error.failure, reason: error.message };
  const tls = tlsFailure(error);
  if (tls !== null) return { failure: 'upstream_misconfigured', reason: tls };
  if (error instanceof ResultCodeError) {
    const { failure, message } = resultCodeFailure(error.code);
    return { failure, reason: message };
  }
  // A message the frame guard let through but ldapts could not read: out of protocol all the same.
  if (error instanceof MessageParserError)
    return { failure: 'upstream_misconfigured', reason: `unreadable LDAP message: ${error.message}` };
  const err = (error ?? {}) as { code?: string; message?: string };
  const reason = err.code ?? String(err.message ?? error).split('\n')[0] ?? 'error';
  return { failure: 'upstream_unavailable', reason: reason.slice(0, 200) };
}
