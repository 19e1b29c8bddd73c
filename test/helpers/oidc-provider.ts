// A real OpenID Provider for the tests and the demo: oidc-provider (certified) in this process, with
// its own signing key and demo accounts, behind a TLS-terminating relay on loopback that presents a
// certificate of a test CA (certs.ts), so clubhouse verifies TLS as it would in production. The
// relay passes everything through; a test may have it rewrite the token endpoint's answer (the ID
// token re-signed with a changed claim, with another key, or with `alg: none`), or stop answering
// altogether, while the provider keeps doing the real flow.
import {
  createHash,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Provider } from 'oidc-provider';
import { makeTestCertificates, type TestCertificates } from './certs.ts';
import { recordSecrets } from './secrets.ts';

/** One person known to the provider, and the claims its ID tokens carry. */
export interface ProviderAccount {
  readonly login: string;
  readonly password: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

/** A client registered at the provider (clubhouse). */
export interface ProviderClient {
  readonly clientId: string;
  /** client_secret_basic; or, with `publicJwk`, private_key_jwt. */
  readonly clientSecret?: string;
  readonly publicJwk?: Record<string, unknown>;
  readonly redirectUris: readonly string[];
}

/** Rewrites the token endpoint's JSON answer (a test's misbehaving provider); null passes it. */
export type TokenTamper = (body: Record<string, unknown>) => Record<string, unknown>;

export interface TestProvider {
  /** https://localhost:PORT, as discovery and the ID tokens name it. */
  readonly issuer: string;
  readonly caFile: string;
  /** The relay's certificate's public key hash (Chromium's --ignore-certificate-errors-spki-list). */
  readonly spkiHash: string;
  /** The provider's signing key (a test re-signs tokens with it) and its kid. */
  readonly signingKey: KeyObject;
  readonly kid: string;
  /** Applied to every token answer until set back to null. */
  tamper: TokenTamper | null;
  /** Requests that reached the relay, by path (the flow's cost). */
  readonly requests: string[];
  /** How long the relay took to answer each of them (the provider's share of a flow), in ms. */
  readonly durations: number[];
  /** Stops answering: the relay's listener closes and its connections are cut. */
  down(): Promise<void>;
  /** Answers again, on the same port. */
  up(): Promise<void>;
  stop(): Promise<void>;
}

export interface TestProviderOptions {
  readonly accounts: readonly ProviderAccount[];
  readonly clients: readonly ProviderClient[];
  /** Where the relay's certificate and CA go (a fresh temp dir per provider is fine). */
  readonly certDir: string;
  /** The certificates to reuse (one CA for several providers); made in certDir when absent. */
  readonly certs?: TestCertificates;
  /** A fixed port for the relay (the demo); default any free one. */
  readonly port?: number;
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS of `claims` signed RS256 with `key` (a test forging what a provider might send). */
export function signJwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject | null,
): string {
  const input = `${base64url(header)}.${base64url(claims)}`;
  if (key === null) return `${input}.`;
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

/** The claims of a compact JWS (no check: the test reads what the provider issued). */
export function jwtClaims(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}

/** A small login page: the provider's interaction, driven by the tests (HTTP) or by Chromium. */
function loginPage(uid: string, error: string | null): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test provider: sign in</title></head>
<body><main><h1>Test provider</h1>${error === null ? '' : `<p role="alert">${error}</p>`}
<form method="post" action="/interaction/${uid}/login">
<label for="login">Email or username</label> <input id="login" name="login" autocomplete="username">
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password">
<button type="submit">Sign in</button></form></main></body></html>`;
}

async function readBody(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

/** Starts the provider and its relay; stop() ends both. */
export async function startTestProvider(options: TestProviderOptions): Promise<TestProvider> {
  const certs = options.certs ?? (await makeTestCertificates(options.certDir));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomBytes(8).toString('hex');
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };

  // The relay first: its port is the issuer's.
  const relay = createHttpsServer({ cert: readFileSync(certs.certFile), key: readFileSync(certs.keyFile) });
  await new Promise<void>((resolve) => relay.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (relay.address() as AddressInfo).port;
  const issuer = `https://localhost:${port}`;

  const accounts = new Map(options.accounts.map((account) => [account.login, account]));
  const provider = new Provider(issuer, {
    clients: options.clients.map((client) => ({
      client_id: client.clientId,
      ...(client.publicJwk === undefined
        ? { client_secret: client.clientSecret, token_endpoint_auth_method: 'client_secret_basic' }
        : { jwks: { keys: [client.publicJwk] }, token_endpoint_auth_method: 'private_key_jwt' }),
      redirect_uris: [...client.redirectUris],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    })),
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name'],
    },
    // The claims go into the ID token itself (clubhouse reads no userinfo).
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    async findAccount(_ctx: unknown, sub: string) {
      const account = accounts.get(sub);
      if (account === undefined) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...account.claims }) };
    },
    // A first-party client: the person's consent is taken as given (no consent page).
    async loadExistingGrant(ctx: {
      oidc: {
        provider: Provider;
        client: { clientId: string };
        session: { accountId: string; grantIdFor(clientId: string): string | undefined };
        params: { scope?: string };
      };
    }) {
      const { oidc } = ctx;
      const existing = oidc.session.grantIdFor(oidc.client.clientId);
      if (existing !== undefined) {
        const found = await oidc.provider.Grant.find(existing);
        if (found !== undefined) return found;
      }
      const grant = new oidc.provider.Grant({
        clientId: oidc.client.clientId,
        accountId: oidc.session.accountId,
      });
      grant.addOIDCScope(oidc.params.scope ?? 'openid');
      await grant.save();
      return grant;
    },
    // Short codes, as real providers issue them.
    ttl: {
      AuthorizationCode: 60,
      IdToken: 300,
      AccessToken: 300,
      Session: 3600,
      Interaction: 600,
      Grant: 3600,
    },
  } as ConstructorParameters<typeof Provider>[1]);
  // Behind the relay: believe its X-Forwarded-Proto and -Host.
  provider.proxy = true;
  const providerHandler = provider.callback();

  /** The login interaction: a form, and its post checked against the accounts. */
  const interactions = createHttpServer(async (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    const match = /^\/interaction\/([^/]+)(\/login)?$/.exec(url.pathname);
    if (match === null) return providerHandler(req, res);
    try {
      const details = await provider.interactionDetails(req, res);
      if (req.method === 'GET') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(loginPage(details.uid, null));
        return;
      }
      const form = new URLSearchParams((await readBody(req)).toString('utf8'));
      const account = accounts.get(form.get('login') ?? '');
      if (account === undefined || account.password !== form.get('password')) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(loginPage(details.uid, 'Wrong email or password.'));
        return;
      }
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: account.login } },
        { mergeWithLastSubmission: false },
      );
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(err instanceof Error ? err.message : 'error');
    }
  });
  await new Promise<void>((resolve) => interactions.listen(0, '127.0.0.1', resolve));
  const backendPort = (interactions.address() as AddressInfo).port;

  const state: { tamper: TokenTamper | null } = { tamper: null };
  const requests: string[] = [];
  const durations: number[] = [];
  relay.on('request', async (req, res) => {
    const arrived = performance.now();
    res.on('finish', () => durations.push(performance.now() - arrived));
    const body = await readBody(req);
    const path = req.url ?? '/';
    requests.push(`${req.method} ${path.split('?')[0]}`);
    const upstream = httpRequest(
      {
        host: '127.0.0.1',
        port: backendPort,
        method: req.method,
        path,
        headers: { ...req.headers, 'x-forwarded-proto': 'https', 'x-forwarded-host': `localhost:${port}` },
      },
      async (answer) => {
        let payload = await readBody(answer);
        const headers = { ...answer.headers };
        if (req.method === 'POST' && path.startsWith('/token') && answer.statusCode === 200) {
          const tokens = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
          recordSecrets(String(tokens['id_token'] ?? ''), String(tokens['access_token'] ?? ''));
          if (state.tamper !== null) {
            const changed = state.tamper(tokens);
            recordSecrets(String(changed['id_token'] ?? ''));
            payload = Buffer.from(JSON.stringify(changed));
          }
          headers['content-length'] = String(payload.length);
        }
        res.writeHead(answer.statusCode ?? 502, headers).end(payload);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    upstream.end(body);
  });

  const spki = createPublicKey(readFileSync(certs.certFile)).export({ type: 'spki', format: 'der' });
  const spkiHash = createHash('sha256').update(spki).digest('base64');

  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return {
    issuer,
    caFile: certs.caFile,
    spkiHash,
    signingKey: privateKey,
    kid,
    get tamper() {
      return state.tamper;
    },
    set tamper(value) {
      state.tamper = value;
    },
    requests,
    durations,
    down: () => close(relay),
    up: () => new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve)),
    async stop() {
      if (relay.listening) await close(relay);
      await close(interactions);
    },
  };
}
