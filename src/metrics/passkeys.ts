// The passkey routes' own metric (contract §12): registrations by outcome. Passkey sign-ins are
// login attempts, counted with the others (logins.ts) under backend `passkey`.
import client from 'prom-client';
import type { RegistrationRefusal } from '../auth/passkeys.ts';

/** The passkey routes' view of the metrics: one registration's outcome. */
export interface PasskeyMetrics {
  observeRegistration(outcome: 'created' | RegistrationRefusal): void;
}

/** Registers the passkey metrics in `registry`. */
export function passkeyMetrics(registry: client.Registry): PasskeyMetrics {
  const registrations = new client.Counter({
    name: 'clubhouse_passkey_registrations_total',
    help: 'Passkey registrations by outcome: created, bad_state (no such challenge for this session: used, expired, or another session’s), not_verified, taken (the credential is registered already).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  return {
    observeRegistration(outcome) {
      registrations.inc({ outcome });
    },
  };
}
