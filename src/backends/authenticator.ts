// The seam every authentication backend implements (contract §8): IMAP (§5) and LDAP answer a
// login with "ok" or one of the same failure classes, probe readiness without credentials, and
// close. The chain (chain.ts) asks them in order; the login procedure (auth/login.ts) sees one
// `Authenticator` whatever stands behind it.

/**
 * Why a backend did not log someone in (contract §3, §8): the password refused, input it will not
 * send, its server unreachable, or misconfigured. Whether a user may log in at all is not a
 * backend's to say: auth/ decides that (auth/who-may-log-in.ts), and its LoginFailure adds those
 * refusals. The client always sees one 403; the log and the metrics see the class.
 */
export type BackendFailure =
  | 'bad_credentials'
  | 'rejected_input'
  | 'upstream_unavailable'
  | 'upstream_misconfigured';

/** A backend's answer; `backend` names the one that decided (contract §8: audit line, metrics). */
export type VerifyResult =
  | { ok: true; backend?: string }
  | { ok: false; failure: BackendFailure; reason: string; backend?: string };

/** What a backend's guard reports for metrics: attempts running, waiting, and the breaker. */
export interface GuardStats {
  active: number;
  queued: number;
  breaker: string;
}

/** What the login procedure needs: verify a password, and counters for metrics. */
export interface Authenticator {
  verify(username: string, password: string, clientIp: string): Promise<VerifyResult>;
  /**
   * How long a refusal decided without asking the backends waits for `username` (contract §3: as long
   * as the backends its route would ask take to refuse a wrong password now).
   */
  refusalDelayMs(username: string): number;
  /** The longest one verify() can take: how long a guess may stay in flight (throttle.ts). */
  readonly maxVerifyMs: number;
  /** The password backends behind it, by name, in the order asked; none when only providers sign in. */
  readonly backendNames: readonly string[];
  /** Counters for metrics and readiness. */
  stats(): GuardStats;
  /** Readiness of every backend without credentials, by backend name: "ok" or why not (§8). */
  readiness(): Promise<Record<string, string>>;
  /** Releases what the backends hold (the chain; single backends hold nothing between logins). */
  close(): Promise<void>;
}

export type ProbeResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** A login that failed with this class, as a verify answers it. */
export const verifyFailed = (failure: BackendFailure, reason: string): VerifyResult => ({
  ok: false,
  failure,
  reason,
});

/** A probe that failed with this class: readiness says both (`upstream_misconfigured: TLS: …`). */
export const probeFailed = (failure: BackendFailure, reason: string): ProbeResult => ({
  ok: false,
  reason: `${failure}: ${reason}`,
});

export type BackendKind = 'imap' | 'ldap';

/** Told the kind, name, result and duration of every attempt that reached a server (metrics). */
export type BackendObserver = (
  backend: { readonly name: string; readonly kind: BackendKind },
  result: VerifyResult,
  seconds: number,
) => void;

/** One configured backend: IMAP or LDAP, behind its guard (guard.ts). */
export interface Backend {
  /** Unique; names it in the audit line, the metrics and /readyz. */
  readonly name: string;
  readonly kind: BackendKind;
  /** Mail domains it serves (`local@domain` usernames only); null: every username. */
  readonly domains: readonly string[] | null;
  verify(username: string, password: string, clientIp: string): Promise<VerifyResult>;
  /**
   * How long this backend's refusal of a wrong password takes now (contract §3): one recent refusal's
   * duration, or 0 while it fails fast (breaker open, queue full), as an attempt then would.
   */
  refusalDelayMs(): number;
  readonly maxVerifyMs: number;
  /** Connect, TLS and a credential-free check, within the backend's deadline; never logs a user in. */
  probe(): Promise<ProbeResult>;
  stats(): GuardStats;
  close(): Promise<void>;
}
