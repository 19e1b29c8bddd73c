// Contract §10: every way a sign-in at a provider must fail, against the real provider doing the real
// flow, with its relay rewriting what a misbehaving or impersonated provider would send. Each ends in
// a redirect to /?signin=failed, no session, and the audit class of the cause. (The store does not
// matter here: SQLite; flow.test.ts runs the parts that read or write a store, the user rules
// included, on every store.)
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { fakeAuthenticator, startTestApp, type TestApp } from '../helpers/app.ts';
import {
  assertRefused,
  type OidcHarness,
  oidcAudits,
  PUBLIC_URL,
  startOidcHarness,
  TestBrowser,
  untilCallback,
} from '../helpers/oidc.ts';
import { jwtClaims, signJwt, type TokenTamper } from '../helpers/oidc-provider.ts';
import { recordSecrets } from '../helpers/secrets.ts';

let harness: OidcHarness;
before(async () => {
  harness = await startOidcHarness();
});
after(async () => {
  await harness?.stop();
});

let app: TestApp;
beforeEach(async () => {
  app = await startTestApp({ env: harness.env });
});
afterEach(async () => {
  harness.school.tamper = null;
  await app.close();
});

const failure = () => oidcAudits(app).at(-1)?.['failure'];
const sessions = () => app.stores.sessions.countActive(Date.now());
const browser = () => new TestBrowser(app.fastify, harness.providerFetch);

/** The callback URL with some of its parameters changed. */
function changed(callback: URL, params: Record<string, string>): string {
  const url = new URL(callback);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

/** A sign-in at the school as bob whose token answer the relay passes through `tamper`. */
async function withTamperedToken(tamper: TokenTamper) {
  const person = browser();
  const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
  harness.school.tamper = tamper;
  return person.get(callback.href);
}

/** The ID token re-signed by the provider's own key (unless told otherwise), after `change`. */
function resigned(
  change: (claims: Record<string, unknown>) => Record<string, unknown>,
  signer: {
    header?: Record<string, unknown>;
    key?: ReturnType<typeof generateKeyPairSync>['privateKey'] | null;
  } = {},
): TokenTamper {
  return (body) => {
    const claims = change(jwtClaims(String(body['id_token'])));
    const header = signer.header ?? { alg: 'RS256', kid: harness.school.kid };
    const key = signer.key === undefined ? harness.school.signingKey : signer.key;
    return { ...body, id_token: signJwt(header, claims, key) };
  };
}

describe('the authorization response', () => {
  test('a state that is not the flow’s is bad_state', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
    const forged = randomBytes(32).toString('base64url');
    recordSecrets(forged);
    assertRefused(await person.get(changed(callback, { state: forged })));
    assert.equal(failure(), 'bad_state');
    assert.equal(await sessions(), 0);
  });

  test('an iss of another provider (mix-up, RFC 9207) is bad_state', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
    assertRefused(await person.get(changed(callback, { iss: harness.other.issuer })));
    assert.equal(failure(), 'bad_state');
    assert.equal(await sessions(), 0);
  });

  test('a response from the other provider sent to this provider’s callback is bad_state', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'other', 'bob', 'bob-provider-password');
    const misrouted = new URL(callback);
    misrouted.pathname = '/api/auth/oidc/school/callback';
    assertRefused(await person.get(misrouted.href));
    assert.equal(failure(), 'bad_state');
    assert.equal(await sessions(), 0);
  });

  test('the provider’s error (access_denied) is provider_error', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
    const denied = new URL(callback);
    denied.searchParams.delete('code');
    denied.searchParams.set('error', 'access_denied');
    assertRefused(await person.get(denied.href));
    assert.equal(failure(), 'provider_error');
    assert.match(String(oidcAudits(app).at(-1)?.['reason']), /access_denied/);
    assert.equal(await sessions(), 0);
  });

  test('a code replayed in another flow is refused by the provider: provider_error', async () => {
    const victim = browser();
    const first = await untilCallback(victim, 'school', 'bob', 'bob-provider-password');
    assert.equal((await victim.get(first.callback.href)).status, 302);
    assert.equal(await sessions(), 1);
    // The attacker's own flow, completed with the code already used (and issued for another verifier).
    const attacker = browser();
    const own = await untilCallback(attacker, 'school', 'mallory', 'mallory-provider-password');
    assertRefused(
      await attacker.get(changed(own.callback, { code: first.callback.searchParams.get('code') ?? '' })),
    );
    assert.equal(failure(), 'provider_error');
    assert.match(String(oidcAudits(app).at(-1)?.['reason']), /invalid_grant/);
    assert.equal(await sessions(), 1, 'no session for the replay');
  });
});

describe('the ID token', () => {
  test('control: the relay re-signing the same claims with the provider’s key is accepted', async () => {
    const answer = await withTamperedToken(resigned((claims) => claims));
    assert.equal(answer.status, 302);
    assert.equal(answer.location, `${PUBLIC_URL}/`);
    assert.equal(await sessions(), 1);
  });

  test('a wrong aud is token_invalid', async () => {
    assertRefused(await withTamperedToken(resigned((claims) => ({ ...claims, aud: 'another-client' }))));
    assert.equal(failure(), 'token_invalid');
    assert.match(String(oidcAudits(app).at(-1)?.['reason']), /aud/);
    assert.equal(await sessions(), 0);
  });

  test('an azp naming another client (with several audiences) is token_invalid', async () => {
    assertRefused(
      await withTamperedToken(
        resigned((claims) => ({ ...claims, aud: [claims['aud'], 'another-client'], azp: 'another-client' })),
      ),
    );
    assert.equal(failure(), 'token_invalid');
    assert.equal(await sessions(), 0);
  });

  test('an expired one is token_invalid', async () => {
    const now = Math.floor(Date.now() / 1000);
    assertRefused(
      await withTamperedToken(resigned((claims) => ({ ...claims, iat: now - 7200, exp: now - 3600 }))),
    );
    assert.equal(failure(), 'token_invalid');
    assert.match(String(oidcAudits(app).at(-1)?.['reason']), /exp/);
    assert.equal(await sessions(), 0);
  });

  test('one without iat is token_invalid', async () => {
    assertRefused(await withTamperedToken(resigned(({ iat: _, ...claims }) => claims)));
    assert.equal(failure(), 'token_invalid');
    assert.equal(await sessions(), 0);
  });

  test('one issued by another issuer is token_invalid', async () => {
    assertRefused(await withTamperedToken(resigned((claims) => ({ ...claims, iss: harness.other.issuer }))));
    assert.equal(failure(), 'token_invalid');
    assert.equal(await sessions(), 0);
  });

  test('one signed by a key not in the provider’s JWKS is token_invalid', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    assertRefused(
      await withTamperedToken(
        resigned((claims) => claims, { header: { alg: 'RS256', kid: 'not-the-providers' }, key: privateKey }),
      ),
    );
    assert.equal(failure(), 'token_invalid');
    assert.equal(await sessions(), 0);
  });

  test('one signed by another key under the provider’s kid is token_invalid', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    assertRefused(await withTamperedToken(resigned((claims) => claims, { key: privateKey })));
    assert.equal(failure(), 'token_invalid');
    assert.match(String(oidcAudits(app).at(-1)?.['reason']), /signature/);
    assert.equal(await sessions(), 0);
  });

  test('alg: none (no signature) is token_invalid', async () => {
    assertRefused(
      await withTamperedToken(resigned((claims) => claims, { header: { alg: 'none' }, key: null })),
    );
    assert.equal(failure(), 'token_invalid');
    assert.equal(await sessions(), 0);
  });

  test('a wrong nonce is token_invalid', async () => {
    assertRefused(
      await withTamperedToken(
        resigned((claims) => ({ ...claims, nonce: randomBytes(32).toString('base64url') })),
      ),
    );
    assert.equal(failure(), 'token_invalid');
    assert.match(String(oidcAudits(app).at(-1)?.['reason']), /nonce/);
    assert.equal(await sessions(), 0);
  });
});

describe('the identity', () => {
  test('email_verified: false is not_allowed', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'school', 'eve', 'eve-provider-password');
    assertRefused(await person.get(callback.href));
    assert.equal(failure(), 'not_allowed');
    assert.equal(await sessions(), 0);
  });

  test('a domain the provider is not trusted for is not_allowed', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'school', 'mallory', 'mallory-provider-password');
    assertRefused(await person.get(callback.href));
    assert.equal(failure(), 'not_allowed');
    assert.equal(await sessions(), 0);
    assert.equal(await app.stores.users.get('mallory@elsewhere.example'), null, 'no user is created');
  });
});

describe('the provider down', () => {
  test('at the callback: upstream_unavailable, and /readyz 503 naming the provider', async () => {
    const person = browser();
    const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
    await harness.school.down();
    try {
      assertRefused(await person.get(callback.href));
      assert.equal(failure(), 'upstream_unavailable');
      assert.equal(await sessions(), 0);
      const ready = await app.fastify.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      const body = JSON.parse(ready.body) as { failing: string[]; checks: Record<string, string> };
      assert.deepEqual(body.failing, ['school']);
      assert.match(body.checks['school'] ?? '', /^unreachable: ECONNREFUSED$/);
      assert.equal(body.checks['other'], 'ok');
      // A new sign-in cannot start either; the browser is sent back with the failure.
      const start = await person.get(`${PUBLIC_URL}/api/auth/oidc/school/start`);
      // The discovery document is cached: start needs no call to the provider, the callback does.
      assert.equal(start.status, 302);
    } finally {
      await harness.school.up();
    }
    const ready = await startTestApp({ env: harness.env });
    try {
      assert.equal((await ready.fastify.inject({ url: '/readyz' })).statusCode, 200);
    } finally {
      await ready.close();
    }
  });

  test('at start-up: the service starts, start answers upstream_unavailable until the provider is back', async () => {
    await harness.school.down();
    let upAgain = false;
    const late = await startTestApp({ env: harness.env });
    try {
      const person = new TestBrowser(late.fastify, harness.providerFetch);
      const start = await person.get(`${PUBLIC_URL}/api/auth/oidc/school/start`);
      assertRefused(start);
      assert.equal(oidcAudits(late).at(-1)?.['failure'], 'upstream_unavailable');
      await harness.school.up();
      upAgain = true;
      const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
      assert.equal((await person.get(callback.href)).location, `${PUBLIC_URL}/`);
    } finally {
      if (!upAgain) await harness.school.up();
      await late.close();
    }
  });
});

test('a password login works beside the providers, unchanged', async () => {
  const both = await startTestApp({
    env: harness.env,
    authenticator: fakeAuthenticator({ carol: 'carol-password-beside-oidc' }),
  });
  try {
    const login = await both.fastify.inject({
      method: 'POST',
      url: '/api/auth/login',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'Carol', password: 'carol-password-beside-oidc' }),
    });
    recordSecrets('carol-password-beside-oidc');
    assert.equal(login.statusCode, 200);
    assert.equal(login.body, '"carol"');
    const providers = await both.fastify.inject({ url: '/api/auth/providers' });
    assert.equal(providers.headers['x-password-login'], 'true');
  } finally {
    await both.close();
  }
});
