// contract §12 in the browser: the two WebAuthn ceremonies, each the server's options, the browser's
// part (@simplewebauthn/browser: the options' base64url turned into buffers and back, and the
// browser's DOMExceptions named), then the server's verdict. One ceremony runs at a time: starting
// one cancels the one before (the autofill's, when the person presses the button instead).

import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import {
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  startAuthentication,
  startRegistration,
  WebAuthnAbortService,
  WebAuthnError,
} from '@simplewebauthn/browser';
import {
  createPasskey,
  type PasskeyInfo,
  passkeyAuthenticationOptions,
  passkeyLogIn,
  passkeyRegistrationOptions,
} from './api.ts';
import type { Failure } from './text.ts';

/** Why the browser's part ended without a credential. */
export type BrowserRefusal =
  /** The person closed the prompt, or it timed out (NotAllowedError: the browser says no more). */
  | 'cancelled'
  /** Another ceremony took its place, or the page moved on. */
  | 'aborted'
  /** This authenticator already holds a passkey of this account (excludeCredentials matched). */
  | 'already-registered'
  /** The page is not at the address passkeys are bound to (the relying party id of PUBLIC_URL). */
  | 'wrong-address'
  /** No authenticator here can make a discoverable, user-verified passkey. */
  | 'unsupported'
  | 'other';

/** A ceremony's end: the server's data, a server answer that was not a success, or the browser's no. */
export type PasskeyOutcome<T> =
  | { readonly kind: 'done'; readonly data: T }
  | { readonly kind: 'server'; readonly failure: Failure }
  | { readonly kind: 'browser'; readonly refusal: BrowserRefusal };

/** True when this browser has WebAuthn at all (an old browser, or a page outside a secure context, has not). */
export function webAuthnHere(): boolean {
  return browserSupportsWebAuthn();
}

/** True when this browser can offer passkeys in the username field's autofill (conditional mediation). */
export function passkeyAutofillHere(): Promise<boolean> {
  return browserSupportsWebAuthnAutofill().catch(() => false);
}

/** Ends the ceremony in progress, if any (leaving the sign-in page, or signed in by password). */
export function cancelPasskeyCeremony(): void {
  WebAuthnAbortService.cancelCeremony();
}

function refusalOf(error: unknown): BrowserRefusal {
  const code = error instanceof WebAuthnError ? error.code : null;
  const name = error instanceof Error ? error.name : '';
  if (code === 'ERROR_CEREMONY_ABORTED' || name === 'AbortError') return 'aborted';
  if (code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED') return 'already-registered';
  if (code === 'ERROR_INVALID_DOMAIN' || code === 'ERROR_INVALID_RP_ID' || name === 'SecurityError')
    return 'wrong-address';
  if (
    code === 'ERROR_AUTHENTICATOR_MISSING_DISCOVERABLE_CREDENTIAL_SUPPORT' ||
    code === 'ERROR_AUTHENTICATOR_MISSING_USER_VERIFICATION_SUPPORT' ||
    code === 'ERROR_AUTHENTICATOR_NO_SUPPORTED_PUBKEYCREDPARAMS_ALG' ||
    name === 'NotSupportedError'
  )
    return 'unsupported';
  if (name === 'NotAllowedError') return 'cancelled';
  return 'other';
}

/**
 * Signs in with a passkey: fresh options (a challenge bound to this browser), the browser's prompt,
 * then the login. Resolves with the canonical username once the session cookies are set.
 */
export async function signInWithPasskey(): Promise<PasskeyOutcome<string>> {
  const options = await passkeyAuthenticationOptions();
  if (!options.ok) return { kind: 'server', failure: options };
  return signInWithOptions(options.data, false);
}

/**
 * The sign-in with options already fetched; with `autofill`, the browser offers the passkeys in the
 * username field's autofill (conditional mediation) and this waits until one is picked, or until
 * another ceremony or cancelPasskeyCeremony() ends it ('aborted').
 */
export async function signInWithOptions(
  optionsJSON: PublicKeyCredentialRequestOptionsJSON,
  autofill: boolean,
): Promise<PasskeyOutcome<string>> {
  let credential: Awaited<ReturnType<typeof startAuthentication>>;
  try {
    credential = await startAuthentication({ optionsJSON, useBrowserAutofill: autofill });
  } catch (error) {
    return { kind: 'browser', refusal: refusalOf(error) };
  }
  const result = await passkeyLogIn(credential);
  return result.ok ? { kind: 'done', data: result.data } : { kind: 'server', failure: result };
}

/**
 * Creates a passkey for the signed-in user: the registration options (a challenge bound to this
 * session), the browser's prompt, then the passkey stored under `name`.
 */
export async function createPasskeyHere(name: string): Promise<PasskeyOutcome<PasskeyInfo>> {
  const options = await passkeyRegistrationOptions();
  if (!options.ok) return { kind: 'server', failure: options };
  let credential: Awaited<ReturnType<typeof startRegistration>>;
  try {
    credential = await startRegistration({ optionsJSON: options.data });
  } catch (error) {
    return { kind: 'browser', refusal: refusalOf(error) };
  }
  const result = await createPasskey(credential, name);
  return result.ok ? { kind: 'done', data: result.data } : { kind: 'server', failure: result };
}
