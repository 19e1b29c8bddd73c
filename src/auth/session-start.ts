// What follows a verified identity, whatever verified it (a password at a backend, contract §3, or
// an identity provider, §10): who may log in (who-may-log-in.ts), then a fresh session (§2).
import type { LoginClient, Sessions, SignedInWith } from './sessions.ts';
import type { Refusal, WhoMayLogIn } from './who-may-log-in.ts';

export interface SessionStartDeps {
  readonly whoMayLogIn: WhoMayLogIn;
  readonly sessions: Sessions;
}

export type SessionStart =
  | { readonly kind: 'started'; readonly sessionId: string; readonly expiresAt: number }
  | ({ readonly kind: 'refused' } & Refusal);

/**
 * Records the login of `username` (created on first login when allowed), ends the session the
 * browser sent along and starts a new one (contract §2: no session fixation), recording `how` it
 * signed in (§12); refused for a disabled
 * user, or an unknown one under ALLOW_NEW_USERS=false. The new id is for the cookie, never a log.
 */
export async function startSession(
  deps: SessionStartDeps,
  username: string,
  client: LoginClient,
  previousSessionId: string | undefined,
  how: SignedInWith,
): Promise<SessionStart> {
  const refused = await deps.whoMayLogIn.recordLogin(username, deps.sessions.now());
  if (refused !== null) return { kind: 'refused', ...refused };

  await deps.sessions.end(previousSessionId);
  const session = await deps.sessions.start(username, client, how);
  const raced = await deps.whoMayLogIn.afterSessionStart(username);
  if (raced !== null) {
    await deps.sessions.end(session.id);
    return { kind: 'refused', ...raced };
  }
  return { kind: 'started', sessionId: session.id, expiresAt: session.expiresAt };
}
