// Who may log in (contract §3, §4): a user who is not disabled, and one not known yet only while
// ALLOW_NEW_USERS is true. One rule, whatever proved the identity (a password at a backend, an
// identity provider), asked at three moments of every login:
//   1. before any backend is asked (login.ts): a refusal then contacts no backend and is timed as
//      a backend's refusal would be, so its timing tells nothing of the cause;
//   2. once the identity is verified (session-start.ts): the store records the login and creates a
//      new user when allowed, in one step, so no disable or creation slips in between;
//   3. once the session is written (session-start.ts): a disable that raced the login either saw
//      the session (and deleted it with the user's others) or is seen here, and the session ends.
import type { LoginAdmission, UserRecord, UserStore } from '../store/types.ts';

/** A refusal of this rule: the class for the log and metrics, and the reason for the audit line. */
export interface Refusal {
  readonly failure: 'user_disabled' | 'user_not_allowed';
  readonly reason: string;
}

const DISABLED: Refusal = { failure: 'user_disabled', reason: 'user is disabled' };
const NOT_ALLOWED: Refusal = {
  failure: 'user_not_allowed',
  reason: 'unknown user and ALLOW_NEW_USERS=false',
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

  /** Moment 1, before any backend is asked: why `username` may not log in, or null. */
  async beforeVerifying(username: string): Promise<Refusal | null> {
    return refusalOf(admissionOf(await this.#users.get(username), this.#allowNewUsers));
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
