// One identity provider (contract §10), as openid-client (the certified relying-party library) sees
// it: discovery read once and cached, the authorization URL with a fresh state, nonce and PKCE S256
// challenge, and the callback: the authorization response checked (state, RFC 9207 `iss`), the code
// exchanged with client authentication and the verifier, the ID token checked by the library —
// signature against the provider's JWKS with the algorithms it announces (never `none`), iss, aud,
// azp, exp, iat, nonce. What is ours: which claim is the username, and the readiness probe.
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as client from 'openid-client';
import type { ProbeResult } from '../authenticator.ts';
import { mailDomain } from '../chain.ts';
import { classifyCallback } from './classify.ts';
import { failureReason, providerHttp, traced } from './http.ts';
import type { OidcSettings, ProviderFailure } from './settings.ts';

/** The secrets of one flow: kept server-side until the callback, never logged. */
export interface FlowSecrets {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

type BeginResult =
  | { readonly ok: true; readonly url: string; readonly secrets: FlowSecrets }
  | { readonly ok: false; readonly failure: 'upstream_unavailable'; readonly reason: string };

/** A verified identity: the username claim's value as the provider gave it. */
type FinishResult =
  | { readonly ok: true; readonly claim: string }
  | { readonly ok: false; readonly failure: ProviderFailure; readonly reason: string };

export interface OidcProvider {
  readonly name: string;
  readonly label: string;
  /** Reads the discovery document unless it is cached; start-up calls it. */
  discover(): Promise<ProbeResult>;
  /** A new flow: the provider's authorization URL and the secrets to keep until the callback. */
  begin(): Promise<BeginResult>;
  /** The callback: `query` is its query string as received, `secrets` the flow's. */
  finish(query: string, secrets: FlowSecrets): Promise<FinishResult>;
  /** Discovery document and keys read afresh (no credentials); never signs anyone in. */
  probe(): Promise<ProbeResult>;
  close(): Promise<void>;
}

/** The Web Crypto algorithm a private_key_jwt key signs with, by its type. */
function signingAlgorithm(type: string | undefined, curve: string | undefined) {
  if (type === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  if (type === 'ec' && curve === 'prime256v1') return { name: 'ECDSA', namedCurve: 'P-256' };
  if (type === 'ed25519') return { name: 'Ed25519' };
  return null;
}

/** The client authentication of `settings` (RFC 6749 §2.3.1, or RFC 7523 private_key_jwt). */
function clientAuthentication(settings: OidcSettings): client.ClientAuth {
  const auth = settings.clientAuth;
  if (auth.method === 'client_secret_basic') return client.ClientSecretBasic(auth.secret);
  const key = createPrivateKey(readFileSync(auth.privateKeyFile, 'utf8'));
  const algorithm = signingAlgorithm(key.asymmetricKeyType, key.asymmetricKeyDetails?.namedCurve);
  if (algorithm === null) {
    throw new Error(
      `${settings.name}: privateKeyFile: an RSA, P-256 or Ed25519 key is needed, not ${key.asymmetricKeyType}`,
    );
  }
  const cryptoKey = key.toCryptoKey(algorithm, false, ['sign']);
  return client.PrivateKeyJwt(auth.keyId === null ? cryptoKey : { key: cryptoKey, kid: auth.keyId });
}

/** The username of a verified ID token's claims, or why this identity may not sign in. */
function identityOf(claims: client.IDToken, settings: OidcSettings): FinishResult {
  const value = claims[settings.usernameClaim];
  if (typeof value !== 'string' || value === '')
    return {
      ok: false,
      failure: 'not_allowed',
      reason: `no ${settings.usernameClaim} claim in the ID token`,
    };
  // contract §10: an address the provider has not verified is anybody's to claim.
  if (settings.usernameClaim === 'email' && claims['email_verified'] !== true)
    return { ok: false, failure: 'not_allowed', reason: 'email_verified is not true' };
  if (settings.domains !== null) {
    const domain = mailDomain(value);
    if (domain === null || !settings.domains.includes(domain))
      return {
        ok: false,
        failure: 'not_allowed',
        reason: `the ${settings.usernameClaim} domain is not allowed`,
      };
  }
  return { ok: true, claim: value };
}

/** The discovery document's URL (OpenID Connect Discovery 1.0 §4). */
function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
}

/** One provider of `settings`; nothing is fetched until discover() or a sign-in. */
export function createOidcBackend(settings: OidcSettings): OidcProvider {
  const http = providerHttp(settings.caFile);
  const auth = clientAuthentication(settings);
  let configuration: Promise<client.Configuration> | null = null;

  /** The cached configuration; a failed discovery is forgotten, so the next use tries again. */
  const configured = (): Promise<client.Configuration> => {
    configuration ??= client
      .discovery(new URL(settings.issuer), settings.clientId, undefined, auth, {
        [client.customFetch]: http.fetch,
        timeout: settings.timeoutMs / 1000,
        // The ID token's signature is checked too, not only TLS to the token endpoint (contract §10).
        execute: [client.enableNonRepudiationChecks],
      })
      .catch((err: unknown) => {
        configuration = null;
        throw err;
      });
    return configuration;
  };
  const unavailable = (err: unknown) => ({
    ok: false as const,
    failure: 'upstream_unavailable' as const,
    reason: `discovery: ${failureReason(err)}`,
  });

  return {
    name: settings.name,
    label: settings.label,
    async discover() {
      try {
        await configured();
        return { ok: true };
      } catch (err) {
        return unavailable(err);
      }
    },
    async begin() {
      let config: client.Configuration;
      try {
        config = await configured();
      } catch (err) {
        return unavailable(err);
      }
      const secrets = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        codeVerifier: client.randomPKCECodeVerifier(),
      };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri,
        scope: settings.scope,
        state: secrets.state,
        nonce: secrets.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(secrets.codeVerifier),
        code_challenge_method: 'S256',
      });
      return { ok: true, url: url.href, secrets };
    },
    async finish(query, secrets) {
      let config: client.Configuration;
      try {
        config = await configured();
      } catch (err) {
        return unavailable(err);
      }
      // The URL the provider sent the browser to: the registered redirect URI and what it appended.
      const current = new URL(`${settings.redirectUri}?${query}`);
      const { trace, outcome } = await traced(() =>
        client.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: secrets.codeVerifier,
          expectedState: secrets.state,
          expectedNonce: secrets.nonce,
          idTokenExpected: true,
        }),
      );
      if (outcome.status === 'rejected') return { ok: false, ...classifyCallback(outcome.reason, trace) };
      const claims = outcome.value.claims();
      if (claims === undefined) return { ok: false, failure: 'token_invalid', reason: 'no ID token' };
      return identityOf(claims, settings);
    },
    async probe() {
      try {
        const discovery = await http.get(discoveryUrl(settings.issuer), settings.timeoutMs);
        const metadata = discovery.body as { issuer?: unknown; jwks_uri?: unknown } | null;
        if (discovery.status !== 200) return { ok: false, reason: `discovery: HTTP ${discovery.status}` };
        if (metadata?.issuer !== settings.issuer) return { ok: false, reason: 'discovery: issuer differs' };
        if (typeof metadata.jwks_uri !== 'string' || !metadata.jwks_uri.startsWith('https://'))
          return { ok: false, reason: 'discovery: no https jwks_uri' };
        const jwks = await http.get(metadata.jwks_uri, settings.timeoutMs);
        const keys = (jwks.body as { keys?: unknown } | null)?.keys;
        if (jwks.status !== 200) return { ok: false, reason: `keys: HTTP ${jwks.status}` };
        if (!Array.isArray(keys) || keys.length === 0) return { ok: false, reason: 'keys: none' };
        return { ok: true };
      } catch (err) {
        return { ok: false, reason: `unreachable: ${failureReason(err)}` };
      }
    },
    close: () => http.close(),
  };
}

/**
 * contract §10: each discovery document is read at start-up, without holding start-up up: a provider
 * that is down fails its sign-ins (and /readyz) until it answers, nothing else. `unreached` hears
 * each one that did not answer.
 */
export function discoverInBackground(
  providers: readonly OidcProvider[],
  unreached: (provider: string, reason: string) => void,
): void {
  for (const provider of providers) {
    void provider.discover().then((result) => {
      if (!result.ok) unreached(provider.name, result.reason);
    });
  }
}
