// What one identity provider is configured with (contract §10), and the classes its side of a
// sign-in fails with. config/ parses and checks these; nothing in backends/oidc/ reads a setting.

/** How clubhouse authenticates to the provider's token endpoint. */
type OidcClientAuth =
  /** RFC 6749 §2.3.1: the secret in HTTP Basic (every provider supports it). */
  | { readonly method: 'client_secret_basic'; readonly secret: string }
  /** RFC 7523: a JWT signed with this PKCS#8 PEM key (RSA → RS256, P-256 → ES256, Ed25519 → EdDSA). */
  | { readonly method: 'private_key_jwt'; readonly privateKeyFile: string; readonly keyId: string | null };

export interface OidcSettings {
  /** Names it in the URL, the audit line, the metrics and /readyz. */
  readonly name: string;
  /** The button's text. */
  readonly label: string;
  /** https:// only; its /.well-known/openid-configuration is read at start-up. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientAuth: OidcClientAuth;
  /** Space-separated; always includes `openid`. */
  readonly scope: string;
  /** The ID token claim that is the username (canonicalised by the domain). */
  readonly usernameClaim: string;
  /** The claim's domain must be one of these (`local@domain`); null: any. */
  readonly domains: readonly string[] | null;
  /** A PEM CA added to the system roots for the calls to the provider. */
  readonly caFile: string | null;
  /** PUBLIC_URL + /api/auth/oidc/{name}/callback, as registered at the provider. */
  readonly redirectUri: string;
  /** Deadline of each call to the provider (discovery, keys, token). */
  readonly timeoutMs: number;
}

/**
 * Why the provider's side of a sign-in failed (contract §10), for the audit line and the metrics only:
 * the browser always lands on /?signin=failed. Whether the user may sign in at all is auth/'s to
 * decide (auth/oidc-signin.ts: OidcFailure adds it).
 */
export type ProviderFailure =
  /** No, an unknown, a used or an expired flow; a state or an `iss` that is not this flow's. */
  | 'bad_state'
  /** The provider answered with an error: at the callback (access_denied…) or at the token endpoint. */
  | 'provider_error'
  /** The ID token failed a check: signature, algorithm, iss, aud, azp, exp, iat, nonce. */
  | 'token_invalid'
  /** A verified identity that may not sign in: unverified email, another domain, no such user. */
  | 'not_allowed'
  /** The provider could not be reached, timed out or answered 5xx. */
  | 'upstream_unavailable';
