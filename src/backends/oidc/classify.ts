// Which audit class a failed callback belongs to (contract §10), decided from what the provider did
// (the trace of http.ts) and the error openid-client threw. The reason names the check that failed,
// never a value: openid-client's errors carry the response and the claims in `cause`, which is not
// read here beyond the message of the check.
import { AuthorizationResponseError, ResponseBodyError } from 'openid-client';
import type { CallTrace } from './http.ts';
import type { ProviderFailure } from './settings.ts';

export interface Classified {
  readonly failure: ProviderFailure;
  readonly reason: string;
}

/** A provider-chosen text, cut short and on one line (it goes to the log). */
function short(text: unknown): string {
  return typeof text === 'string' ? text.replace(/\p{Cc}/gu, ' ').slice(0, 120) : '';
}

/** The message of the check that failed: openid-client wraps oauth4webapi's precise one. */
function checkMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const inner = err.cause instanceof Error ? err.cause.message : null;
  return short(inner ?? err.message) || err.name;
}

/** The class and reason of a callback that threw `err`, given what its calls saw. */
export function classifyCallback(err: unknown, trace: CallTrace): Classified {
  // Nothing the provider did can be judged when it did not answer.
  if (trace.unreachable !== null) return { failure: 'upstream_unavailable', reason: trace.unreachable };
  // The provider sent the browser back with an error (access_denied, login_required…).
  if (err instanceof AuthorizationResponseError) {
    const detail = short(err.error_description);
    return {
      failure: 'provider_error',
      reason: `authorization: ${short(err.error)}${detail ? ` (${detail})` : ''}`,
    };
  }
  // The token endpoint refused the code (used, expired, not this client's or this verifier's).
  if (err instanceof ResponseBodyError) {
    const detail = short(err.error_description);
    return { failure: 'provider_error', reason: `token: ${short(err.error)}${detail ? ` (${detail})` : ''}` };
  }
  // No token request was made: the authorization response itself did not check out (its `iss` names
  // another issuer, RFC 9207, or its state is not this flow's).
  if (trace.tokenStatus === null)
    return { failure: 'bad_state', reason: `authorization response: ${checkMessage(err)}` };
  if (trace.tokenStatus < 200 || trace.tokenStatus > 299)
    return { failure: 'provider_error', reason: `token: HTTP ${trace.tokenStatus}` };
  // The provider answered the code; what it answered failed a check (signature, alg, iss, aud, azp,
  // exp, iat, nonce).
  return { failure: 'token_invalid', reason: `ID token: ${checkMessage(err)}` };
}
