// Logging in (contract §3): refuse what must not reach a backend, throttle, decide (who may log in,
// then the backends), answer a refusal no sooner than the failure floor, then start a fresh session.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Authenticator, BackendFailure } from '../backends/authenticator.ts';
import { SingleFlight } from '../backends/single-flight.ts';
import type { Credentials } from './credentials.ts';
import { startSession } from './session-start.ts';
import type { LoginClient, Sessions } from './sessions.ts';
import type { LoginThrottle } from './throttle.ts';
import type { Refusal, WhoMayLogIn } from './who-may-log-in.ts';

/**
 * Why a login failed (contract §3): what the backend reported, or a refusal of who may log in
 * (who-may-log-in.ts), decided here. The client always sees one 403; the log and metrics see this.
 */
export type LoginFailure = BackendFailure | Refusal['failure'];

export interface LoginDeps {
  readonly whoMayLogIn: WhoMayLogIn;
  readonly sessions: Sessions;
  readonly throttle: LoginThrottle;
  readonly authenticator: Authenticator;
  /** contract §3 (AUTH_FAILURE_DELAY_MS): a refusal is answered no sooner than this after it began. */
  readonly failureDelayMs: number;
  /** How a refusal waits out its delay (default a timer); a test records what it asks. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The clock a refusal's delay is measured on, in ms (default `performance.now`); a test's is exact. */
  readonly now?: () => number;
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

type Failure = Extract<LoginOutcome, { kind: 'failure' }>;
/** Whether the credentials may log in, before any session: shared by identical attempts in flight. */
type Verdict = { readonly kind: 'verified'; readonly backend?: string } | Failure;

const fail = (failure: LoginFailure, reason: string): Failure => ({ kind: 'failure', failure, reason });

// contract §3: a refusal decided without the backend counts toward the throttle like bad_credentials.
// An outage does not, nor does input refused before admission (it is never admitted).
const COUNTED: ReadonlySet<LoginFailure> = new Set([
  'bad_credentials',
  'user_disabled',
  'user_not_allowed',
  'password_sign_in_off',
]);

/**
 * Waits at least `ms` by performance.now: a timer counts from the event loop's cached time, which lags
 * on a busy loop, so it can fire a little early; what is left is waited again.
 */
async function sleepAtLeast(ms: number): Promise<void> {
  const end = performance.now() + ms;
  for (let left = ms; left > 0; left = Math.ceil(end - performance.now())) await sleep(left);
}

/** The login procedure of one process; identical attempts in flight share one verdict (contract §3). */
export class LoginProcedure {
  readonly #deps: LoginDeps;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #now: () => number;
  /**
   * contract §3: identical concurrent attempts are answered together, refused by a backend or decided
   * here: a burst of identical attempts for a disabled user ends at once, as one for an active user
   * does, rather than spread over each one's own draw of the refusal delay. Only the verdict is
   * shared: each success still starts its own session.
   */
  readonly #identical = new SingleFlight<Verdict>();

  constructor(deps: LoginDeps) {
    this.#deps = deps;
    this.#sleep = deps.sleep ?? sleepAtLeast;
    this.#now = deps.now ?? (() => performance.now());
  }

  /**
   * One login attempt from `client` (its address keys the throttle; both are kept with the session).
   * `previousSessionId` (the cookie sent along) is invalidated on success: login always mints a new
   * id (contract §2, no session fixation).
   */
  async attempt(
    credentials: Credentials,
    client: LoginClient & { readonly ip: string },
    previousSessionId: string | undefined,
  ): Promise<LoginOutcome> {
    const { username, password, refused } = credentials;
    // contract §3: refused input is never admitted as a guess (five such attempts in parallel would
    // otherwise hold the owner out of their own account), and it reaches no backend.
    if (refused !== null) {
      const decided = await this.#identical.run(username, password, () =>
        this.#refuseHere(username, 'rejected_input', refused),
      );
      return decided.kind === 'verified' ? fail('rejected_input', refused) : decided;
    }
    const deps = this.#deps;
    const verdict = await deps.throttle.admit(username, client.ip, password, this.#longestAttemptMs());
    if (verdict.throttled) return { kind: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds };
    let settled: 'success' | 'counted' | 'other' = 'other';
    try {
      const decided = await this.#identical.run(username, password, () =>
        this.#decide(credentials, client.ip),
      );
      const outcome =
        decided.kind === 'verified'
          ? await this.#start(username, decided, client, previousSessionId)
          : decided;
      if (outcome.kind === 'success') settled = 'success';
      else if (outcome.kind === 'failure' && COUNTED.has(outcome.failure)) settled = 'counted';
      return outcome;
    } finally {
      await deps.throttle.settle(verdict.guess, settled);
    }
  }

  /** The longest one attempt lasts: the backends' deadlines, or the longest refusal wait. */
  #longestAttemptMs(): number {
    return Math.max(this.#deps.authenticator.maxVerifyMs, this.#deps.failureDelayMs);
  }

  /** Who may log in, then the backends; a refusal is answered no sooner than the floor. */
  async #decide(credentials: Credentials, clientIp: string): Promise<Verdict> {
    const started = this.#now();
    const { username, password } = credentials;
    const refused = await this.#deps.whoMayLogIn.beforeVerifying(username);
    if (refused !== null) return this.#refuseHere(username, refused.failure, refused.reason, started);
    const verified = await this.#deps.authenticator.verify(username, password, clientIp);
    if (verified.ok) return { kind: 'verified', backend: verified.backend };
    // contract §3: whatever the backend; a directory that refuses a missing entry faster than a wrong
    // password tells nothing (docs/security.md: timing of refusals).
    await this.#waitUntil(started + this.#deps.failureDelayMs);
    return { kind: 'failure', failure: verified.failure, reason: verified.reason, backend: verified.backend };
  }

  /**
   * A refusal decided without the backends: answered after as long as the backends this username's
   * route would ask take to refuse a wrong password now (contract §3), and no
   * sooner than the floor, so its timing tells nothing of the cause.
   */
  async #refuseHere(
    username: string,
    failure: LoginFailure,
    reason: string,
    started = this.#now(),
  ): Promise<Failure> {
    const imitated = this.#deps.authenticator.refusalDelayMs(username);
    await this.#waitUntil(started + Math.max(this.#deps.failureDelayMs, imitated));
    return fail(failure, reason);
  }

  /** Sleeps until `at`, never less: a timer is armed in whole milliseconds, so the wait is rounded up. */
  async #waitUntil(at: number): Promise<void> {
    const remaining = Math.ceil(at - this.#now());
    if (remaining > 0) await this.#sleep(remaining);
  }

  /** After a verified password: who may log in, then a fresh session (session-start.ts). */
  async #start(
    username: string,
    verified: { readonly backend?: string },
    client: LoginClient,
    previousSessionId: string | undefined,
  ): Promise<LoginOutcome> {
    const started = await startSession(this.#deps, username, client, previousSessionId, {
      method: 'password',
    });
    if (started.kind === 'refused') return fail(started.failure, started.reason);
    return {
      kind: 'success',
      username,
      sessionId: started.sessionId,
      expiresAt: started.expiresAt,
      backend: verified.backend,
    };
  }
}
