// JSON schemas of the passkey endpoints (contract §12): the two WebAuthn ceremonies, a user's
// passkeys and the password switch. The bodies the browser sends are WebAuthn Level 3's JSON forms
// (RegistrationResponseJSON, AuthenticationResponseJSON), checked here for shape and size only: what
// they say is @simplewebauthn/server's to verify (auth/passkeys.ts).
import type { FastifySchema } from 'fastify';
import { API_ERRORS } from '../http/api-errors.ts';
import { cookieAuth, detail, notAuthenticated, unavailable } from '../http/openapi.ts';

/** base64url of at most `bytes` bytes. */
const base64url = (bytes: number, description: string) => ({
  type: 'string',
  pattern: '^[A-Za-z0-9_-]*$',
  maxLength: Math.ceil((bytes * 4) / 3),
  description,
});

// Generous bounds (an attestation object with certificates, a large RSA key), far under 64 KiB.
const credentialId = base64url(1023, 'The credential id (base64url).');
const common = {
  id: credentialId,
  rawId: credentialId,
  type: { type: 'string', enum: ['public-key'] },
  authenticatorAttachment: { type: 'string', maxLength: 32 },
  clientExtensionResults: { type: 'object' },
} as const;

const registrationResponse = {
  type: 'object',
  description: 'RegistrationResponseJSON (WebAuthn Level 3), as navigator.credentials.create() gives it.',
  properties: {
    ...common,
    response: {
      type: 'object',
      properties: {
        clientDataJSON: base64url(4096, 'The client data (base64url).'),
        attestationObject: base64url(16384, 'The attestation object (base64url CBOR).'),
        authenticatorData: base64url(16384, 'The authenticator data (base64url).'),
        transports: { type: 'array', maxItems: 8, items: { type: 'string', maxLength: 32 } },
        publicKeyAlgorithm: { type: 'integer' },
        publicKey: base64url(4096, 'The public key (base64url SPKI).'),
      },
      required: ['clientDataJSON', 'attestationObject'],
    },
  },
  required: ['id', 'rawId', 'type', 'response', 'clientExtensionResults'],
} as const;

const authenticationResponse = {
  type: 'object',
  description: 'AuthenticationResponseJSON (WebAuthn Level 3), as navigator.credentials.get() gives it.',
  properties: {
    ...common,
    response: {
      type: 'object',
      properties: {
        clientDataJSON: base64url(4096, 'The client data (base64url).'),
        authenticatorData: base64url(16384, 'The authenticator data (base64url).'),
        signature: base64url(1024, 'The signature (base64url).'),
        userHandle: base64url(64, 'The user handle the passkey was made for (base64url).'),
      },
      required: ['clientDataJSON', 'authenticatorData', 'signature'],
    },
  },
  required: ['id', 'rawId', 'type', 'response', 'clientExtensionResults'],
} as const;

const name = {
  type: 'string',
  maxLength: 400,
  description: 'A name for the passkey (1 to 100 characters, trimmed; "Passkey" when absent or empty).',
  examples: ['Laptop'],
};

const passkeyView = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'Opaque handle; not the credential id.' },
    name: { type: 'string', examples: ['Laptop'] },
    created: { type: 'string', format: 'date-time', examples: ['2026-11-22T10:00:00Z'] },
    last_used: { type: ['string', 'null'], format: 'date-time', description: 'Null: never used.' },
    synced: { type: 'boolean', description: 'Backed up to a cloud keychain (a synced passkey).' },
    transports: { type: 'array', items: { type: 'string' }, examples: [['internal', 'hybrid']] },
    cloned: {
      type: 'boolean',
      description:
        'A sign-in showed a signature counter that did not move forward: the passkey may have been copied. That sign-in was refused.',
    },
  },
  required: ['id', 'name', 'created', 'last_used', 'synced', 'transports', 'cloned'],
  additionalProperties: false,
} as const;

const settingsView = {
  type: 'object',
  properties: {
    password_sign_in: { type: 'boolean', description: 'Whether the mail password signs this user in.' },
    can_change: {
      type: 'boolean',
      description: 'False under the organisation policy (PASSKEYS_RETIRE_PASSWORD), or without a passkey.',
    },
  },
  required: ['password_sign_in', 'can_change'],
  additionalProperties: false,
} as const;

// WebAuthn Level 3's options: described, not restated field by field (the browser's API defines them).
const creationOptions = {
  type: 'object',
  description:
    'PublicKeyCredentialCreationOptionsJSON (WebAuthn Level 3): pass to PublicKeyCredential.parseCreationOptionsFromJSON().',
  properties: { challenge: { type: 'string' } },
  required: ['challenge', 'rp', 'user', 'pubKeyCredParams'],
  additionalProperties: true,
} as const;

const requestOptions = {
  type: 'object',
  description:
    'PublicKeyCredentialRequestOptionsJSON (WebAuthn Level 3), allowCredentials empty: pass to PublicKeyCredential.parseRequestOptionsFromJSON().',
  properties: { challenge: { type: 'string' } },
  required: ['challenge', 'rpId'],
  additionalProperties: true,
} as const;

const csrfOrSession = {
  description: 'No valid session, or a CSRF refusal.',
  ...detail(API_ERRORS.NOT_AUTHENTICATED.detail),
};
const reauthenticate = {
  description:
    'No valid session, a CSRF refusal, or (creating or deleting a passkey, changing the switch) a session that signed in more than 10 minutes ago.',
  ...detail(API_ERRORS.SIGN_IN_AGAIN.detail),
};
const badRequest = { description: 'Malformed body.', ...detail(API_ERRORS.BAD_REQUEST.detail) };
const tooLarge = { description: 'Body over 64 KiB.', ...detail(API_ERRORS.BODY_TOO_LARGE.detail) };
const notFound = {
  description: "Not one of the caller's passkeys.",
  ...detail(API_ERRORS.NOT_FOUND.detail),
};
const idParam = {
  type: 'object',
  properties: { id: { type: 'string', description: "The passkey's id from the list (opaque)." } },
  required: ['id'],
} as const;

export const PASSKEY_SCHEMAS = {
  list: {
    summary: "The caller's passkeys, newest first (contract §12).",
    tags: ['passkeys'],
    security: cookieAuth,
    response: {
      200: { description: 'The passkeys.', type: 'array', items: passkeyView },
      403: notAuthenticated,
      503: unavailable,
    },
  },
  create: {
    summary: 'Store a new passkey from the credential the browser created (contract §12).',
    description:
      'The challenge must be one issued to this session by POST /api/auth/passkeys/registration, not used before, within 5 minutes; the session must have signed in within the last 10 minutes.',
    tags: ['passkeys'],
    security: cookieAuth,
    body: {
      type: 'object',
      properties: { credential: registrationResponse, name },
      required: ['credential'],
    },
    response: {
      201: { description: 'Stored.', ...passkeyView },
      400: {
        description: 'Malformed, or not verified (nothing stored).',
        ...detail(API_ERRORS.PASSKEY_NOT_VERIFIED.detail),
      },
      403: reauthenticate,
      413: tooLarge,
      503: unavailable,
    },
  },
  registration: {
    summary: 'Options to create a passkey, with a fresh challenge bound to this session (contract §12).',
    tags: ['passkeys'],
    security: cookieAuth,
    response: { 200: creationOptions, 403: csrfOrSession, 503: unavailable },
  },
  rename: {
    summary: 'Rename one of the caller’s passkeys.',
    tags: ['passkeys'],
    security: cookieAuth,
    params: idParam,
    body: { type: 'object', properties: { name }, required: ['name'] },
    response: {
      200: { description: 'Renamed.', ...passkeyView },
      400: badRequest,
      403: csrfOrSession,
      404: notFound,
      503: unavailable,
    },
  },
  remove: {
    summary:
      "Delete one of the caller's passkeys; the sessions that signed in with it end (the last one turns password sign-in back on).",
    tags: ['passkeys'],
    security: cookieAuth,
    params: idParam,
    response: {
      204: { description: 'Deleted; no body.', type: 'null' },
      403: reauthenticate,
      404: notFound,
      503: unavailable,
    },
  },
  settings: {
    summary: "Whether the caller's mail password signs them in (contract §12).",
    tags: ['passkeys'],
    security: cookieAuth,
    response: { 200: settingsView, 403: notAuthenticated, 503: unavailable },
  },
  changeSettings: {
    summary: 'Turn password sign-in off (needs a passkey) or back on.',
    tags: ['passkeys'],
    security: cookieAuth,
    body: {
      type: 'object',
      properties: { password_sign_in: { type: 'boolean' } },
      required: ['password_sign_in'],
    },
    response: {
      200: settingsView,
      400: {
        description: 'Malformed, or no passkey to sign in with.',
        ...detail(API_ERRORS.NO_PASSKEY.detail),
      },
      403: {
        description: `${reauthenticate.description} Or the organisation's policy (PASSKEYS_RETIRE_PASSWORD).`,
        ...detail(API_ERRORS.SIGN_IN_AGAIN.detail),
      },
      503: unavailable,
    },
  },
  authentication: {
    summary: 'Options to sign in with a passkey; the challenge is bound to this browser by a cookie.',
    description:
      'Sets the cookie passkey_challenge (HttpOnly, SameSite=Strict, Path=/api/auth/passkeys/, Max-Age 300). allowCredentials is empty: the browser offers the person its passkeys for this site.',
    tags: ['passkeys'],
    response: { 200: requestOptions, 403: csrfOrSession, 503: unavailable },
  },
  login: {
    summary: 'Sign in with a passkey: answered as a password login (contract §12).',
    description:
      'Verified against the challenge of this browser’s passkey_challenge cookie (used once), the origin, the relying party, user presence and verification, the stored public key, the user handle and the signature counter; then the user rules of a password login. Sets csrftoken and sessionid as login does.',
    tags: ['passkeys'],
    body: {
      type: 'object',
      properties: { credential: authenticationResponse },
      required: ['credential'],
    },
    response: {
      200: { type: 'string', description: 'Signed in: the canonical username.', examples: ['alice'] },
      400: badRequest,
      403: {
        description: 'Cannot log in (whatever the cause), or a CSRF refusal.',
        ...detail(API_ERRORS.LOGIN_FAILED.detail),
      },
      413: tooLarge,
      429: {
        description: 'Too many failed sign-ins from this address.',
        ...detail('Request was throttled.'),
      },
      503: unavailable,
    },
  },
} as const satisfies Record<string, FastifySchema>;
