// Who may log in (contract §3, §4, §12): a user who is not disabled, and one not known yet only while
// ALLOW_NEW_USERS is true; a password only for a user who has not turned password sign-in off. One
// rule, whatever proves the identity (a password at a backend, an identity provider, a passkey),
// asked at three moments of every login:
//   1. before any backend is asked (login.ts): a refusal then contacts no backend and is timed as
//      a backend's refusal would be, so its timing tells nothing of the cause;
//   2. once the identity is verified (session-start.ts): the store records the login and creates a
//      new user when allowed, in one step, so no disable or creation slips in between;
//   3. once the session is written (session-start.ts): a disable that raced the login either saw
//      the session (and deleted it with the user's others) or is seen here, and the session ends.
import type { LoginAdmission, UserRecord, UserStore } from '../store/types.ts';

/** A refusal of this rule: the class for the log and metrics, and the reason for the audit line. */
export interface Refusal {
  readonly failure: 'user_disabled' | 'user_not_allowed' | 'password_sign_in_off';
  readonly reason: string;
}

/** What proved (or is to prove) the identity: the rule differs only for a password (contract §12). */
export type ProofKind = 'password' | 'oidc' | 'passkey';

const DISABLED: Refusal = { failure: 'user_disabled', reason: 'user is disabled' };
const NOT_ALLOWED: Refusal = {
  failure: 'user_not_allowed',
  reason: 'unknown user and ALLOW_NEW_USERS=false',
};
// contract §12: the user turned password sign-in off; answered as a wrong password is.
const PASSWORD_OFF: Refusal = {
  failure: 'password_sign_in_off',
  reason: 'password sign-in is turned off for this user',
};
const DISABLED_DURING_LOGIN: Refusal = { failure: 'user_disabled', reason: 'user was disabled during login' };

/**
 * The rule itself, for `user` as stored (null: not known yet). The store applies the same rule when
 * it records a login (UserStore.recordLogin), in the transaction that creates a new user.
 */
function admissionOf(user: UserRecord | null, allowNewUsers: boolean): LoginAdmission {
  if (user === null) return allowNewUsers ? 'ok' : 'unknown';
  return user.active ? 'ok' : 'disabled';
}

/** The refusal a verdict of the rule amounts to, or null. */
function refusalOf(admission: LoginAdmission): Refusal | null {
  if (admission === 'disabled') return DISABLED;
  if (admission === 'unknown') return NOT_ALLOWED;
  return null;
}

/** The rule over one user store and ALLOW_NEW_USERS; each method is one of its three moments. */
export class WhoMayLogIn {
  readonly #users: UserStore;
  readonly #allowNewUsers: boolean;

  constructor(users: UserStore, allowNewUsers: boolean) {
    this.#users = users;
    this.#allowNewUsers = allowNewUsers;
  }

  /**
   * Moment 1, before any backend is asked (or, for a passkey, before anything is recorded): why
   * `username` may not log in with `proof`, or null. A user who turned password sign-in off is
   * refused a password here, so no backend confirms that user's password to anyone (contract §12).
   */
  async beforeVerifying(username: string, proof: ProofKind = 'password'): Promise<Refusal | null> {
    const user = await this.#users.get(username);
    const refused = refusalOf(admissionOf(user, this.#allowNewUsers));
    if (refused !== null) return refused;
    return proof === 'password' && user?.passwordSignIn === false ? PASSWORD_OFF : null;
  }

  /**
   * Moment 2, the identity verified: records the login of `username` at `now` (the user created on
   * first login when allowed), or why it may not log in.
   */
  async recordLogin(username: string, now: number): Promise<Refusal | null> {
    return refusalOf(await this.#users.recordLogin(username, now, this.#allowNewUsers));
  }

  /** Moment 3, the session written: null while `username` may still log in, else the refusal. */
  async afterSessionStart(username: string): Promise<Refusal | null> {
    const user = await this.#users.get(username);
    return user?.active === true ? null : DISABLED_DURING_LOGIN;
  }
}
