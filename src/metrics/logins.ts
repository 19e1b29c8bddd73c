// The login routes' metrics (contract §6, §8, §10): every attempt by outcome, failure class and the
// backend or identity provider that decided, and the throttled ones on their own.
import client from 'prom-client';
import type { LoginFailure } from '../auth/login.ts';
import type { OidcFailure } from '../auth/oidc-signin.ts';
import type { PasskeyFailure } from '../auth/passkeys.ts';

type LoginOutcomeLabel = 'success' | 'failure' | 'throttled';

/** The login routes' view of the metrics (routes/auth.ts, routes/oidc.ts): one attempt's outcome. */
export interface LoginMetrics {
  /**
   * `backend`: the backend that decided (contract §8), '' when none did (throttled, refused input);
   * for a sign-in at an identity provider, the provider (§10), with its own failure classes; for a
   * passkey, `passkey` (§12).
   */
  observeLogin(
    outcome: LoginOutcomeLabel,
    failure: LoginFailure | OidcFailure | PasskeyFailure | undefined,
    backend?: string,
  ): void;
}

/** Registers the login metrics in `registry`. */
export function loginMetrics(registry: client.Registry): LoginMetrics {
  const logins = new client.Counter({
    name: 'clubhouse_login_attempts_total',
    help: 'Login attempts by outcome (success, failure, throttled), failure class and the backend that decided.',
    labelNames: ['outcome', 'failure', 'backend'] as const,
    registers: [registry],
  });
  const throttled = new client.Counter({
    name: 'clubhouse_login_throttled_total',
    help: 'Login attempts refused with 429 without contacting IMAP.',
    registers: [registry],
  });
  return {
    observeLogin(outcome, failure, backend) {
      logins.inc({ outcome, failure: failure ?? '', backend: backend ?? '' });
      if (outcome === 'throttled') throttled.inc();
    },
  };
}
