// What follows a verified identity, whatever verified it (a password at a backend, contract §3, or
// an identity provider, §10): the user rules, then a fresh session (§2).
import type { UserStore } from '../store/types.ts';
import type { LoginClient, Sessions } from './sessions.ts';

export interface SessionStartDeps {
  readonly users: UserStore;
  readonly sessions: Sessions;
  /** contract §4: false admits only users that already exist. */
  readonly allowNewUsers: boolean;
}

export type SessionStart =
  | { readonly kind: 'started'; readonly sessionId: string; readonly expiresAt: number }
  | {
      readonly kind: 'refused';
      readonly failure: 'user_disabled' | 'user_not_allowed';
      readonly reason: string;
    };

/**
 * Records the login of `username` (created on first login when allowed), ends the session the
 * browser sent along and starts a new one (contract §2: no session fixation); refused for a disabled
 * user, or an unknown one under ALLOW_NEW_USERS=false. The new id is for the cookie, never a log.
 */
export async function startSession(
  deps: SessionStartDeps,
  username: string,
  client: LoginClient,
  previousSessionId: string | undefined,
): Promise<SessionStart> {
  const admission = await deps.users.recordLogin(username, deps.sessions.now(), deps.allowNewUsers);
  if (admission === 'disabled')
    return { kind: 'refused', failure: 'user_disabled', reason: 'user is disabled' };
  if (admission === 'unknown')
    return { kind: 'refused', failure: 'user_not_allowed', reason: 'unknown user and ALLOW_NEW_USERS=false' };

  await deps.sessions.end(previousSessionId);
  const session = await deps.sessions.start(username, client);
  // A disable that raced this login has either seen this session (and deleted it) or is seen here.
  const after = await deps.users.get(username);
  if (after === null || !after.active) {
    await deps.sessions.end(session.id);
    return { kind: 'refused', failure: 'user_disabled', reason: 'user was disabled during login' };
  }
  return { kind: 'started', sessionId: session.id, expiresAt: session.expiresAt };
}
