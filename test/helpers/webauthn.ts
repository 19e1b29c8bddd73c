// A software authenticator for the passkey tests (contract §12), built on node:crypto: attestation
// `none`, ES256, Ed25519 and RS256 keys (and ES384, an algorithm the service does not offer), the
// clientDataJSON, authenticatorData and attestationObject a browser would hand the page, CBOR encoded
// by tiny-cbor. It plays the honest device and the forger: every field a verifier must check can be
// overridden (origin, type, challenge, RP id, flags, counter, user handle, the signing key).
// And the browser side: helpers that run the two ceremonies through the API with cookies.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { type CBORType, encodeCBOR } from '@levischuck/tiny-cbor';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { setCookies } from './app.ts';
import { recordSecrets } from './secrets.ts';

export type Algorithm = 'ES256' | 'Ed25519' | 'RS256' | 'ES384';

const COSE_ALG: Record<Algorithm, number> = { ES256: -7, Ed25519: -8, RS256: -257, ES384: -35 };

/** A credential the authenticator holds. */
export interface SoftCredential {
  readonly id: Buffer;
  readonly algorithm: Algorithm;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly rpId: string;
  readonly userHandle: Buffer;
  /** The signature counter; null: this authenticator keeps none (always 0, as synced passkeys). */
  counter: number | null;
}

/** What a forger changes in what it signs or sends; unset: what an honest authenticator does. */
export interface Forgery {
  readonly origin?: string;
  readonly type?: string;
  readonly challenge?: string;
  readonly rpId?: string;
  readonly userPresent?: boolean;
  readonly userVerified?: boolean;
  readonly counter?: number;
  readonly userHandle?: Buffer | null;
  /** Sign with this key instead of the credential's. */
  readonly signingKey?: KeyObject;
  readonly credentialId?: Buffer;
}

const b64u = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

function keyPair(algorithm: Algorithm): { privateKey: KeyObject; publicKey: KeyObject } {
  switch (algorithm) {
    case 'ES256':
      return generateKeyPairSync('ec', { namedCurve: 'P-256' });
    case 'ES384':
      return generateKeyPairSync('ec', { namedCurve: 'P-384' });
    case 'Ed25519':
      return generateKeyPairSync('ed25519');
    case 'RS256':
      return generateKeyPairSync('rsa', { modulusLength: 2048 });
  }
}

/** The COSE_Key (RFC 9053) of a public key. */
function coseKey(algorithm: Algorithm, publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: 'jwk' });
  const bytes = (value: string | undefined) => new Uint8Array(Buffer.from(value ?? '', 'base64url'));
  const key = new Map<number, number | Uint8Array>();
  key.set(3, COSE_ALG[algorithm]);
  if (algorithm === 'ES256' || algorithm === 'ES384') {
    key.set(1, 2);
    key.set(-1, algorithm === 'ES256' ? 1 : 2);
    key.set(-2, bytes(jwk.x));
    key.set(-3, bytes(jwk.y));
  } else if (algorithm === 'Ed25519') {
    key.set(1, 1);
    key.set(-1, 6);
    key.set(-2, bytes(jwk.x));
  } else {
    key.set(1, 3);
    key.set(-1, bytes(jwk.n));
    key.set(-2, bytes(jwk.e));
  }
  return encodeCBOR(key);
}

function signWith(algorithm: Algorithm, key: KeyObject, data: Buffer): Buffer {
  if (algorithm === 'Ed25519') return sign(null, data, key);
  if (algorithm === 'ES384') return sign('sha384', data, { key, dsaEncoding: 'der' });
  // WebAuthn §6.5.6: ECDSA signatures are DER encoded.
  return sign('sha256', data, algorithm === 'ES256' ? { key, dsaEncoding: 'der' } : key);
}

function clientData(type: string, challenge: string, origin: string): string {
  return b64u(Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false })));
}

/** The flags byte (WebAuthn §6.1): UP, UV, BE and BS (a synced passkey), AT with credential data. */
function flags(forgery: Forgery, attested: boolean, synced: boolean): number {
  let value = 0;
  if (forgery.userPresent !== false) value |= 0x01;
  if (forgery.userVerified !== false) value |= 0x04;
  if (synced) value |= 0x08 | 0x10;
  if (attested) value |= 0x40;
  return value;
}

function counterBytes(counter: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(counter);
  return out;
}

/** A passkey provider: its credentials, by base64url id. */
export class SoftAuthenticator {
  readonly credentials = new Map<string, SoftCredential>();
  readonly #origin: string;
  readonly #synced: boolean;

  /** `origin`: where the browser runs the page; `synced`: passkeys backed up (BE/BS set, no counter). */
  constructor(origin: string, options: { readonly synced?: boolean } = {}) {
    this.#origin = origin;
    this.#synced = options.synced === true;
  }

  /** navigator.credentials.create() with the server's options: a RegistrationResponseJSON. */
  create(
    options: Record<string, unknown>,
    forgery: Forgery & { readonly algorithm?: Algorithm } = {},
  ): { response: Record<string, unknown>; credential: SoftCredential } {
    const user = options['user'] as { id: string };
    const rp = options['rp'] as { id: string };
    const algorithm = forgery.algorithm ?? 'ES256';
    const { privateKey, publicKey } = keyPair(algorithm);
    const credential: SoftCredential = {
      id: forgery.credentialId ?? randomBytes(32),
      algorithm,
      privateKey,
      publicKey,
      rpId: rp.id,
      userHandle: Buffer.from(user.id, 'base64url'),
      counter: this.#synced ? null : 0,
    };
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credential.id.length);
    const authData = Buffer.concat([
      sha256(forgery.rpId ?? rp.id),
      Buffer.from([flags(forgery, true, this.#synced)]),
      counterBytes(forgery.counter ?? 0),
      Buffer.alloc(16), // AAGUID: none
      idLength,
      credential.id,
      coseKey(algorithm, publicKey),
    ]);
    recordSecrets(b64u(credential.id), b64u(coseKey(algorithm, publicKey)), String(options['challenge']));
    const statement = new Map<string | number, CBORType>([
      ['fmt', 'none'],
      ['attStmt', new Map<string | number, CBORType>()],
      ['authData', new Uint8Array(authData)],
    ]);
    const attestationObject = encodeCBOR(statement);
    const challenge = forgery.challenge ?? String(options['challenge']);
    const response = {
      id: b64u(credential.id),
      rawId: b64u(credential.id),
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: clientData(
          forgery.type ?? 'webauthn.create',
          challenge,
          forgery.origin ?? this.#origin,
        ),
        attestationObject: b64u(attestationObject),
        transports: ['internal', 'hybrid'],
      },
    };
    this.credentials.set(b64u(credential.id), credential);
    return { response, credential };
  }

  /** navigator.credentials.get() with the server's options, using `credential`: an AuthenticationResponseJSON. */
  get(
    options: Record<string, unknown>,
    credential: SoftCredential,
    forgery: Forgery = {},
  ): Record<string, unknown> {
    let counter = 0;
    if (credential.counter !== null) {
      credential.counter += 1;
      counter = credential.counter;
    }
    const authData = Buffer.concat([
      sha256(forgery.rpId ?? String(options['rpId'])),
      Buffer.from([flags(forgery, false, this.#synced)]),
      counterBytes(forgery.counter ?? counter),
    ]);
    const challenge = forgery.challenge ?? String(options['challenge']);
    const clientDataJSON = clientData(
      forgery.type ?? 'webauthn.get',
      challenge,
      forgery.origin ?? this.#origin,
    );
    const signed = Buffer.concat([authData, sha256(Buffer.from(clientDataJSON, 'base64url'))]);
    const signature = signWith(credential.algorithm, forgery.signingKey ?? credential.privateKey, signed);
    recordSecrets(b64u(signature), b64u(credential.id), challenge);
    const id = b64u(forgery.credentialId ?? credential.id);
    const userHandle = forgery.userHandle === undefined ? credential.userHandle : forgery.userHandle;
    return {
      id,
      rawId: id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON,
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        ...(userHandle === null ? {} : { userHandle: b64u(userHandle) }),
      },
    };
  }
}

/** The headers of a same-origin browser request with the session's cookies and CSRF token. */
export function browserHeaders(session: { cookie: string; csrftoken: string }): Record<string, string> {
  return { cookie: session.cookie, 'x-csrftoken': session.csrftoken, 'content-type': 'application/json' };
}

/** POST `url` as JSON (or with no body) with `headers`. */
export function post(
  fastify: FastifyInstance,
  url: string,
  headers: Record<string, string>,
  body?: unknown,
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE' = 'POST',
): Promise<LightMyRequestResponse> {
  return fastify.inject({
    method,
    url,
    // No body, no content type (as fetch() sends a bodiless POST).
    headers:
      body === undefined
        ? Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'content-type'))
        : headers,
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

/** The registration options for the session, as the server gave them (and the response). */
export async function registrationOptions(
  fastify: FastifyInstance,
  session: { cookie: string; csrftoken: string },
): Promise<Record<string, unknown>> {
  const response = await post(fastify, '/api/auth/passkeys/registration', browserHeaders(session));
  if (response.statusCode !== 200)
    throw new Error(`registration options: ${response.statusCode} ${response.body}`);
  const options = response.json() as Record<string, unknown>;
  recordSecrets(String(options['challenge']));
  return options;
}

/** Creates a passkey for the session with `authenticator`; the response of POST /api/auth/passkeys. */
export async function createPasskey(
  fastify: FastifyInstance,
  session: { cookie: string; csrftoken: string },
  authenticator: SoftAuthenticator,
  forgery: Forgery & { readonly algorithm?: Algorithm; readonly name?: string } = {},
): Promise<{ response: LightMyRequestResponse; credential: SoftCredential }> {
  const options = await registrationOptions(fastify, session);
  const created = authenticator.create(options, forgery);
  const response = await post(fastify, '/api/auth/passkeys', browserHeaders(session), {
    credential: created.response,
    name: forgery.name ?? 'Laptop',
  });
  return { response, credential: created.credential };
}

/** A browser's challenge for a passkey sign-in: the options and its challenge cookie. */
export async function authenticationOptions(
  fastify: FastifyInstance,
  remoteAddress?: string,
): Promise<{ options: Record<string, unknown>; cookie: string; raw: string }> {
  const response = await fastify.inject({
    method: 'POST',
    url: '/api/auth/passkeys/authentication',
    ...(remoteAddress === undefined ? {} : { remoteAddress }),
  });
  if (response.statusCode !== 200)
    throw new Error(`authentication options: ${response.statusCode} ${response.body}`);
  const set = setCookies(response).get('passkey_challenge');
  if (set === undefined) throw new Error('no passkey_challenge cookie');
  recordSecrets(set.value);
  const options = response.json() as Record<string, unknown>;
  recordSecrets(String(options['challenge']));
  return { options, cookie: `passkey_challenge=${set.value}`, raw: set.raw };
}

/** Posts a sign-in assertion with the browser's challenge cookie. */
export async function postLogin(
  fastify: FastifyInstance,
  cookie: string,
  credential: unknown,
  remoteAddress?: string,
): Promise<LightMyRequestResponse> {
  return fastify.inject({
    method: 'POST',
    url: '/api/auth/passkeys/login',
    ...(remoteAddress === undefined ? {} : { remoteAddress }),
    headers: { cookie, 'content-type': 'application/json' },
    payload: JSON.stringify({ credential }),
  });
}

/** Signs in with `credential`: the whole ceremony as a browser runs it; the session cookies on success. */
export async function passkeyLogin(
  fastify: FastifyInstance,
  authenticator: SoftAuthenticator,
  credential: SoftCredential,
  forgery: Forgery = {},
  remoteAddress?: string,
): Promise<{ response: LightMyRequestResponse; cookie: string; csrftoken: string; sessionid: string }> {
  const { options, cookie } = await authenticationOptions(fastify, remoteAddress);
  const response = await postLogin(
    fastify,
    cookie,
    authenticator.get(options, credential, forgery),
    remoteAddress,
  );
  const cookies = setCookies(response);
  const sessionid = cookies.get('sessionid')?.value ?? '';
  const csrftoken = cookies.get('csrftoken')?.value ?? '';
  recordSecrets(sessionid, csrftoken);
  return { response, cookie: `sessionid=${sessionid}; csrftoken=${csrftoken}`, csrftoken, sessionid };
}
