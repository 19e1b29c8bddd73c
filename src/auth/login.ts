// Logging in (contract §3): throttle, refuse what must not reach IMAP, verify, then start a fresh session.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Authenticator, LoginFailure } from '../backends/imap/authenticator.ts';
import type { UserStore } from '../store/types.ts';
import type { Credentials } from './credentials.ts';
import type { LoginClient, Sessions } from './sessions.ts';
import type { LoginThrottle } from './throttle.ts';

export interface LoginDeps {
  readonly users: UserStore;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
  readonly authenticator: Authenticator;
  readonly allowNewUsers: boolean;
  /** How a refusal decided here waits out its delay (default a timer); a test records what it asks. */
  readonly sleep?: (ms: number) => Promise<void>;
}

export type LoginOutcome =
  | {
      readonly kind: 'success';
      readonly username: string;
      readonly sessionId: string;
      readonly expiresAt: number;
      readonly backend?: string;
    }
  | {
      readonly kind: 'failure';
      readonly failure: LoginFailure;
      readonly reason: string;
      /** The backend that decided (contract §8); absent when none was asked. */
      readonly backend?: string;
    }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number };

const fail = (failure: LoginFailure, reason: string): LoginOutcome => ({ kind: 'failure', failure, reason });

// contract §3: a refusal decided without the backend counts toward the throttle like bad_credentials.
// rejected_input does not (a control-character refusal locks nobody out), nor does an outage.
const COUNTED: ReadonlySet<LoginFailure> = new Set(['bad_credentials', 'user_disabled', 'user_not_allowed']);

/**
 * A refusal decided here, without the backend: answered only after as long as the backend's refusal
 * of a wrong password would take (contract §3), so its timing tells nothing of the cause. Input
 * refused before the backend waits too: every 403 of this endpoint then looks alike.
 */
async function refuseHere(deps: LoginDeps, failure: LoginFailure, reason: string): Promise<LoginOutcome> {
  await (deps.sleep ?? sleep)(deps.authenticator.refusalDelayMs());
  return fail(failure, reason);
}

/**
 * One login attempt from `client` (its address keys the throttle; both are kept with the session). `previousSessionId` (the cookie sent along) is invalidated on
 * success: login always mints a new id (contract §2, no session fixation).
 */
export async function login(
  deps: LoginDeps,
  credentials: Credentials,
  client: LoginClient & { readonly ip: string },
  previousSessionId: string | undefined,
): Promise<LoginOutcome> {
  const { username, password } = credentials;
  const clientIp = client.ip;
  const verdict = await deps.throttle.admit(username, clientIp, password, deps.authenticator.maxVerifyMs);
  if (verdict.throttled) return { kind: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds };
  let settled: 'success' | 'counted' | 'other' = 'other';
  try {
    const outcome = await attempt(deps, credentials, client, previousSessionId);
    if (outcome.kind === 'success') settled = 'success';
    else if (outcome.kind === 'failure' && COUNTED.has(outcome.failure)) settled = 'counted';
    return outcome;
  } finally {
    await deps.throttle.settle(verdict.guess, settled);
  }
}

async function attempt(
  deps: LoginDeps,
  credentials: Credentials,
  client: LoginClient & { readonly ip: string },
  previousSessionId: string | undefined,
): Promise<LoginOutcome> {
  const { username, password } = credentials;
  // contract §3: decided here, so nothing odd is ever written into an IMAP command.
  if (credentials.refused !== null) return refuseHere(deps, 'rejected_input', credentials.refused);
  const known = await deps.users.get(username);
  if (known !== null && !known.active) return refuseHere(deps, 'user_disabled', 'user is disabled');
  if (known === null && !deps.allowNewUsers)
    return refuseHere(deps, 'user_not_allowed', 'unknown user and ALLOW_NEW_USERS=false');

  const verified = await deps.authenticator.verify(username, password, client.ip);
  if (!verified.ok) {
    return { kind: 'failure', failure: verified.failure, reason: verified.reason, backend: verified.backend };
  }

  const admission = await deps.users.recordLogin(username, deps.sessions.now(), deps.allowNewUsers);
  if (admission === 'disabled') return fail('user_disabled', 'user is disabled');
  if (admission === 'unknown') return fail('user_not_allowed', 'unknown user and ALLOW_NEW_USERS=false');

  await deps.sessions.end(previousSessionId);
  const session = await deps.sessions.start(username, client);
  // A disable that raced this login has either seen this session (and deleted it) or is seen here.
  const after = await deps.users.get(username);
  if (after === null || !after.active) {
    await deps.sessions.end(session.id);
    return fail('user_disabled', 'user was disabled during login');
  }
  return {
    kind: 'success',
    username,
    sessionId: session.id,
    expiresAt: session.expiresAt,
    backend: verified.backend,
  };
}
