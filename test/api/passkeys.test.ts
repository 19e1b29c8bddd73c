// Contract §12 at the API, on every store: creating a passkey after a password sign-in, signing in
// with it, the list, rename and delete, the password switch and the recent sign-in rule, with a
// software authenticator (helpers/webauthn.ts) playing the honest device and the forger. Every
// forgery is refused with nothing stored and no session.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { fakeAuthenticator, loginAs, setCookies, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';
import {
  authenticationOptions,
  browserHeaders,
  createPasskey,
  passkeyLogin,
  post,
  postLogin,
  registrationOptions,
  SoftAuthenticator,
} from '../helpers/webauthn.ts';

const ORIGIN = 'http://localhost:8000';
const PASSWORDS = { alice: 'alice-password', bob: 'bob-password', carol: 'carol-password' };
const TEN_MINUTES = 10 * 60 * 1000;

type Session = Awaited<ReturnType<typeof loginAs>>;

describeEachStore('passkeys (contract §12)', (store) => {
  let t: TestApp;
  let backend: ReturnType<typeof fakeAuthenticator>;
  before(async () => {
    backend = fakeAuthenticator(PASSWORDS);
    t = await startTestApp({
      store,
      authenticator: backend,
      env: { PUBLIC_URL: ORIGIN, THROTTLE_IP_FAILURES: '1000', THROTTLE_USER_FAILURES: '1000' },
      fixedClock: true,
    });
  });
  after(() => t.close());
  beforeEach(async () => {
    // Every test starts with no passkey and password sign-in on for everyone.
    for (const name of Object.keys(PASSWORDS)) {
      await t.stores.users.recordLogin(name, t.clock.now, true);
      await t.stores.passkeys.removeAll(name);
      await t.stores.sessions.revokeUser(name);
    }
  });

  const login = async (username: keyof typeof PASSWORDS): Promise<Session> => {
    const session = await loginAs(t.fastify, username, PASSWORDS[username]);
    assert.equal(session.response.statusCode, 200, session.response.body);
    return session;
  };
  const get = (url: string, cookie: string) => t.fastify.inject({ url, headers: { cookie } });
  const listOf = async (session: Session) => {
    const response = await get('/api/auth/passkeys', session.cookie);
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Record<string, unknown>[];
  };
  const liveSessions = () => t.stores.sessions.countActive(t.clock.now);
  /** A user with one ES256 passkey, ready to sign in with. */
  const enrolled = async (username: keyof typeof PASSWORDS = 'alice') => {
    const session = await login(username);
    const device = new SoftAuthenticator(ORIGIN);
    const { response, credential } = await createPasskey(t.fastify, session, device);
    assert.equal(response.statusCode, 201, response.body);
    // The clock is fixed: what comes next is newer, so "newest first" has one answer.
    t.clock.advance(1000);
    return { session, device, credential, passkey: response.json() as Record<string, unknown> };
  };

  /** A refused sign-in: 403 as a password login, no session cookie, no session stored, nothing recorded. */
  const refused = async (
    attempt: () => Promise<{ statusCode: number; body: string; headers: Record<string, unknown> }>,
    username: keyof typeof PASSWORDS = 'alice',
  ) => {
    const sessionsBefore = await liveSessions();
    const passkeysBefore = await t.stores.passkeys.list(username);
    const response = await attempt();
    assert.equal(response.statusCode, 403, response.body);
    assert.deepEqual(JSON.parse(response.body), { detail: 'Cannot log you in' });
    assert.equal(setCookies(response as never).get('sessionid'), undefined);
    assert.equal(await liveSessions(), sessionsBefore);
    const passkeysAfter = await t.stores.passkeys.list(username);
    assert.deepEqual(
      passkeysAfter.map((p) => [p.counter, p.lastUsedAt]),
      passkeysBefore.map((p) => [p.counter, p.lastUsedAt]),
    );
  };

  test('create a passkey after a password sign-in, then sign in with it; the session says how', async () => {
    const { session, device, credential, passkey } = await enrolled();
    assert.match(String(passkey['id']), /^[0-9a-f]{32}$/);
    assert.deepEqual(
      { ...passkey, id: undefined, created: undefined },
      {
        id: undefined,
        name: 'Laptop',
        created: undefined,
        last_used: null,
        synced: false,
        transports: ['internal', 'hybrid'],
        cloned: false,
      },
    );
    assert.deepEqual(await listOf(session), [passkey]);
    // The id is an opaque handle, never the credential id.
    assert.notEqual(passkey['id'], credential.id.toString('base64url'));

    const signedIn = await passkeyLogin(t.fastify, device, credential);
    assert.equal(signedIn.response.statusCode, 200, signedIn.response.body);
    assert.equal(signedIn.response.body, '"alice"');
    assert.match(signedIn.sessionid, /^[a-z0-9]{32}$/);
    assert.equal((await get('/api/auth/check', signedIn.cookie)).body, '"alice"');
    const sessions = (await get('/api/auth/sessions', signedIn.cookie)).json() as Record<string, unknown>[];
    assert.deepEqual(
      sessions.map((s) => [s['method'], s['current']]),
      [
        ['passkey', true],
        ['password', false],
      ],
    );
    const [used] = await listOf(signedIn);
    assert.notEqual(used?.['last_used'], null);
    // The challenge cookie is cleared by the sign-in's answer.
    assert.match(setCookies(signedIn.response).get('passkey_challenge')?.raw ?? '', /Max-Age=0/);
    assert.equal(backend.calls, backend.calls, 'no password backend asked');
  });

  test('Ed25519 and RS256 passkeys, and a synced passkey without a counter', async () => {
    const session = await login('bob');
    for (const algorithm of ['Ed25519', 'RS256'] as const) {
      const device = new SoftAuthenticator(ORIGIN);
      const { response, credential } = await createPasskey(t.fastify, session, device, { algorithm });
      assert.equal(response.statusCode, 201, `${algorithm}: ${response.body}`);
      t.clock.advance(1000);
      assert.equal((await passkeyLogin(t.fastify, device, credential)).response.statusCode, 200, algorithm);
    }
    const synced = new SoftAuthenticator(ORIGIN, { synced: true });
    const { response, credential } = await createPasskey(t.fastify, session, synced, { name: 'Phone' });
    assert.equal(response.statusCode, 201, response.body);
    assert.equal((response.json() as Record<string, unknown>)['synced'], true);
    // No counter (always 0): two sign-ins in a row are both fine.
    assert.equal((await passkeyLogin(t.fastify, synced, credential)).response.statusCode, 200);
    assert.equal((await passkeyLogin(t.fastify, synced, credential)).response.statusCode, 200);
    assert.deepEqual(
      (await listOf(session)).map((p) => p['name']),
      ['Phone', 'Laptop', 'Laptop'],
    );
  });

  test('the creation options: discoverable, user verification, attestation none, ES256/EdDSA/RS256, existing excluded', async () => {
    const { session, credential } = await enrolled();
    const options = await registrationOptions(t.fastify, session);
    assert.equal((options['rp'] as { id: string }).id, 'localhost');
    const user = options['user'] as { id: string; name: string };
    assert.equal(user.name, 'alice');
    assert.ok(Buffer.from(user.id, 'base64url').length >= 32);
    assert.ok(!Buffer.from(user.id, 'base64url').toString('latin1').includes('alice'));
    assert.equal(Buffer.from(String(options['challenge']), 'base64url').length, 32);
    assert.equal(options['attestation'], 'none');
    assert.deepEqual(options['authenticatorSelection'], {
      residentKey: 'required',
      userVerification: 'required',
      requireResidentKey: true,
    });
    assert.deepEqual(
      (options['pubKeyCredParams'] as { alg: number }[]).map((p) => p.alg),
      [-7, -8, -257],
    );
    assert.deepEqual(
      (options['excludeCredentials'] as { id: string }[]).map((c) => c.id),
      [credential.id.toString('base64url')],
    );
    // The same user handle every time.
    const again = await registrationOptions(t.fastify, session);
    assert.equal((again['user'] as { id: string }).id, user.id);
  });

  test('the request options: empty allowCredentials, user verification, a challenge cookie HttpOnly and SameSite=Strict', async () => {
    const { options, raw } = await authenticationOptions(t.fastify);
    assert.deepEqual(options['allowCredentials'], []);
    assert.equal(options['rpId'], 'localhost');
    assert.equal(options['userVerification'], 'required');
    assert.equal(Buffer.from(String(options['challenge']), 'base64url').length, 32);
    assert.match(
      raw,
      /^passkey_challenge=[A-Za-z0-9_-]{43}; Max-Age=300; Path=\/api\/auth\/passkeys\/; Expires=.*; HttpOnly; SameSite=Strict$/,
    );
  });

  test('a replayed challenge is refused', async () => {
    const { device, credential } = await enrolled();
    const { options, cookie } = await authenticationOptions(t.fastify);
    const assertion = device.get(options, credential);
    assert.equal((await postLogin(t.fastify, cookie, assertion)).statusCode, 200);
    await refused(() => postLogin(t.fastify, cookie, assertion));
    // Even with a fresh signature over the same challenge.
    await refused(() => postLogin(t.fastify, cookie, device.get(options, credential)));
  });

  test("a challenge used by another browser (another's cookie, or none) is refused", async () => {
    const { device, credential } = await enrolled();
    const mine = await authenticationOptions(t.fastify);
    const theirs = await authenticationOptions(t.fastify);
    await refused(() => postLogin(t.fastify, theirs.cookie, device.get(mine.options, credential)));
    await refused(() => postLogin(t.fastify, '', device.get(mine.options, credential)));
    // The browser's own challenge was burnt by nobody: it still works once.
    assert.equal(
      (await postLogin(t.fastify, mine.cookie, device.get(mine.options, credential))).statusCode,
      200,
    );
  });

  test('an expired challenge is refused', async () => {
    const { device, credential } = await enrolled();
    const { options, cookie } = await authenticationOptions(t.fastify);
    t.clock.advance(5 * 60 * 1000 + 1);
    await refused(() => postLogin(t.fastify, cookie, device.get(options, credential)));
  });

  test('a challenge issued for registration is refused at sign-in, and a sign-in challenge at registration', async () => {
    const { session, device, credential } = await enrolled();
    const creation = await registrationOptions(t.fastify, session);
    const { options, cookie } = await authenticationOptions(t.fastify);
    await refused(() =>
      postLogin(
        t.fastify,
        cookie,
        device.get(options, credential, { challenge: String(creation['challenge']) }),
      ),
    );
    const made = new SoftAuthenticator(ORIGIN).create(creation, { challenge: String(options['challenge']) });
    const response = await post(t.fastify, '/api/auth/passkeys', browserHeaders(session), {
      credential: made.response,
    });
    assert.equal(response.statusCode, 400, response.body);
    assert.equal((await listOf(session)).length, 1);
  });

  test('forged assertions are refused: origin, subdomain, RP id, flags, type, key, user handle', async () => {
    const { device, credential } = await enrolled();
    const bob = await enrolled('bob');
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const forgeries = {
      'wrong origin': { origin: 'https://evil.example' },
      'an origin of a subdomain': { origin: 'http://sub.localhost:8000' },
      'another port': { origin: 'http://localhost:8001' },
      'wrong RP id hash': { rpId: 'evil.example' },
      'user present flag missing': { userPresent: false },
      'user verified flag missing': { userVerified: false },
      'type webauthn.create': { type: 'webauthn.create' },
      'signature by another key': { signingKey: other.privateKey },
      'user handle of another user': { userHandle: bob.credential.userHandle },
      'no user handle': { userHandle: null },
      "another user's credential id": { credentialId: bob.credential.id },
    };
    for (const [name, forgery] of Object.entries(forgeries)) {
      await refused(async () => (await passkeyLogin(t.fastify, device, credential, forgery)).response).catch(
        (err: Error) => {
          throw new Error(`${name}: ${err.message}`);
        },
      );
    }
    // The honest device still signs in.
    assert.equal((await passkeyLogin(t.fastify, device, credential)).response.statusCode, 200);
  });

  test('a counter that does not move forward is refused, and the passkey is marked as cloned', async () => {
    const { session, device, credential } = await enrolled();
    assert.equal((await passkeyLogin(t.fastify, device, credential)).response.statusCode, 200);
    const counter = credential.counter as number;
    const before = await t.stores.passkeys.list('alice');
    const sessionsBefore = await liveSessions();
    const replayed = await passkeyLogin(t.fastify, device, credential, { counter });
    assert.equal(replayed.response.statusCode, 403);
    assert.equal(await liveSessions(), sessionsBefore);
    const [marked] = await listOf(session);
    assert.equal(marked?.['cloned'], true);
    const after = await t.stores.passkeys.list('alice');
    assert.equal(after[0]?.counter, before[0]?.counter, 'the counter did not move');
    // A lower one too.
    assert.equal(
      (await passkeyLogin(t.fastify, device, credential, { counter: 1 })).response.statusCode,
      403,
    );
  });

  test('a disabled user cannot sign in with a passkey; a deleted passkey signs nobody in', async () => {
    const { session, device, credential, passkey } = await enrolled();
    await t.stores.users.setActive('alice', false);
    try {
      await refused(async () => (await passkeyLogin(t.fastify, device, credential)).response);
    } finally {
      await t.stores.users.setActive('alice', true);
    }
    const fresh = await login('alice');
    const removed = await post(
      t.fastify,
      `/api/auth/passkeys/${passkey['id']}`,
      browserHeaders(fresh),
      undefined,
      'DELETE',
    );
    assert.equal(removed.statusCode, 204, removed.body);
    await refused(async () => (await passkeyLogin(t.fastify, device, credential)).response);
    assert.deepEqual(await listOf(session), []);
  });

  test('registration forgeries are refused with nothing stored', async () => {
    const session = await login('carol');
    const bob = await enrolled('bob');
    const attempts = {
      'wrong origin': { origin: 'https://evil.example' },
      'an origin of a subdomain': { origin: 'http://sub.localhost:8000' },
      'wrong RP id hash': { rpId: 'evil.example' },
      'user present flag missing': { userPresent: false },
      'user verified flag missing': { userVerified: false },
      'type webauthn.get': { type: 'webauthn.get' },
      'an algorithm not offered (ES384)': { algorithm: 'ES384' as const },
      'a credential id registered to another user': { credentialId: bob.credential.id },
    };
    for (const [name, forgery] of Object.entries(attempts)) {
      const { response } = await createPasskey(t.fastify, session, new SoftAuthenticator(ORIGIN), forgery);
      assert.equal(response.statusCode, 400, `${name}: ${response.body}`);
      assert.match(String(response.json().detail), /passkey/i, name);
    }
    assert.deepEqual(await listOf(session), []);
    assert.equal((await t.stores.passkeys.list('bob')).length, 1);
  });

  test('a registration challenge is used once, and only by the session it was issued to', async () => {
    const alice = await login('alice');
    const bob = await login('bob');
    const options = await registrationOptions(t.fastify, alice);
    const device = new SoftAuthenticator(ORIGIN);
    // Bob's session presents Alice's challenge: refused, and the challenge is burnt.
    const stolen = device.create(options);
    const byBob = await post(t.fastify, '/api/auth/passkeys', browserHeaders(bob), {
      credential: stolen.response,
    });
    assert.equal(byBob.statusCode, 400, byBob.body);
    const late = await post(t.fastify, '/api/auth/passkeys', browserHeaders(alice), {
      credential: device.create(options).response,
    });
    assert.equal(late.statusCode, 400, late.body);
    // A fresh challenge: once, then never again.
    const fresh = await registrationOptions(t.fastify, alice);
    const first = await post(t.fastify, '/api/auth/passkeys', browserHeaders(alice), {
      credential: device.create(fresh).response,
    });
    assert.equal(first.statusCode, 201, first.body);
    const again = await post(t.fastify, '/api/auth/passkeys', browserHeaders(alice), {
      credential: device.create(fresh).response,
    });
    assert.deepEqual(
      [again.statusCode, again.json()],
      [400, { detail: 'The passkey request expired or was already used. Try again.' }],
    );
    // Expired after 5 minutes.
    const old = await registrationOptions(t.fastify, alice);
    t.clock.advance(5 * 60 * 1000 + 1);
    const fresher = await login('alice');
    const expired = await post(t.fastify, '/api/auth/passkeys', browserHeaders(fresher), {
      credential: device.create(old).response,
    });
    assert.equal(expired.statusCode, 400);
    assert.equal((await listOf(fresher)).length, 1);
    assert.deepEqual(await t.stores.passkeys.list('bob'), []);
  });

  test('registration needs a session; creating or deleting a passkey needs a sign-in within 10 minutes', async () => {
    const noSession = await post(t.fastify, '/api/auth/passkeys/registration', {
      'content-type': 'application/json',
    });
    assert.deepEqual(
      [noSession.statusCode, noSession.json()],
      [403, { detail: 'Authentication credentials were not provided.' }],
    );
    const anonymous = await post(
      t.fastify,
      '/api/auth/passkeys',
      { 'content-type': 'application/json' },
      {
        credential: new SoftAuthenticator(ORIGIN).create({
          user: { id: 'AAAA' },
          rp: { id: 'localhost' },
          challenge: 'AAAA',
        }).response,
      },
    );
    assert.equal(anonymous.statusCode, 403);

    const { session, passkey } = await enrolled();
    t.clock.advance(TEN_MINUTES + 1000);
    const stale = await createPasskey(t.fastify, session, new SoftAuthenticator(ORIGIN));
    assert.deepEqual(
      [stale.response.statusCode, stale.response.json()],
      [403, { detail: 'Sign in again to change your passkeys.' }],
    );
    const deleted = await post(
      t.fastify,
      `/api/auth/passkeys/${passkey['id']}`,
      browserHeaders(session),
      undefined,
      'DELETE',
    );
    assert.deepEqual(
      [deleted.statusCode, deleted.json()],
      [403, { detail: 'Sign in again to change your passkeys.' }],
    );
    const switched = await post(
      t.fastify,
      '/api/auth/passkeys/settings',
      browserHeaders(session),
      { password_sign_in: false },
      'PUT',
    );
    assert.deepEqual(
      [switched.statusCode, switched.json()],
      [403, { detail: 'Sign in again to change your passkeys.' }],
    );
    assert.equal((await listOf(session)).length, 1, 'nothing was created or deleted');
    // Renaming is not sensitive, and the list still answers.
    const renamed = await post(
      t.fastify,
      `/api/auth/passkeys/${passkey['id']}`,
      browserHeaders(session),
      { name: '  Work laptop ' },
      'PATCH',
    );
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json().name, 'Work laptop');
    // A fresh sign-in, by any method, can.
    const fresh = await login('alice');
    assert.equal(
      (await createPasskey(t.fastify, fresh, new SoftAuthenticator(ORIGIN))).response.statusCode,
      201,
    );
  });

  test("another user's passkey id is not found, as a made-up one", async () => {
    const alice = await enrolled('alice');
    const bob = await login('bob');
    const id = String(alice.passkey['id']);
    for (const target of [id, '0'.repeat(32), 'nonsense']) {
      const renamed = await post(
        t.fastify,
        `/api/auth/passkeys/${target}`,
        browserHeaders(bob),
        { name: 'mine' },
        'PATCH',
      );
      assert.deepEqual([renamed.statusCode, renamed.json()], [404, { detail: 'Not found.' }]);
      const deleted = await post(
        t.fastify,
        `/api/auth/passkeys/${target}`,
        browserHeaders(bob),
        undefined,
        'DELETE',
      );
      assert.deepEqual([deleted.statusCode, deleted.json()], [404, { detail: 'Not found.' }]);
    }
    assert.equal((await listOf(alice.session))[0]?.['name'], 'Laptop');
    const badName = await post(
      t.fastify,
      `/api/auth/passkeys/${id}`,
      browserHeaders(alice.session),
      { name: 'a\u0000b' },
      'PATCH',
    );
    assert.equal(badName.statusCode, 400);
    const longName = await post(
      t.fastify,
      `/api/auth/passkeys/${id}`,
      browserHeaders(alice.session),
      { name: 'x'.repeat(101) },
      'PATCH',
    );
    assert.equal(longName.statusCode, 400);
  });

  test('password sign-in off: the right password gets the same 403 as a wrong one, no backend asked; on again', async () => {
    const { session, device, credential } = await enrolled();
    const settings = await get('/api/auth/passkeys/settings', session.cookie);
    assert.deepEqual(settings.json(), { password_sign_in: true, can_change: true });
    const off = await post(
      t.fastify,
      '/api/auth/passkeys/settings',
      browserHeaders(session),
      { password_sign_in: false },
      'PUT',
    );
    assert.deepEqual([off.statusCode, off.json()], [200, { password_sign_in: false, can_change: true }]);
    const calls = backend.calls;
    const right = await loginAs(t.fastify, 'alice', PASSWORDS.alice);
    const wrong = await loginAs(t.fastify, 'alice', 'not-the-password');
    assert.deepEqual(
      [right.response.statusCode, right.response.body],
      [403, '{"detail":"Cannot log you in"}'],
    );
    assert.deepEqual([wrong.response.statusCode, wrong.response.body], [403, right.response.body]);
    assert.equal(backend.calls, calls, 'no backend was asked');
    // Bob is not affected; the passkey still signs Alice in.
    assert.equal((await loginAs(t.fastify, 'bob', PASSWORDS.bob)).response.statusCode, 200);
    const viaPasskey = await passkeyLogin(t.fastify, device, credential);
    assert.equal(viaPasskey.response.statusCode, 200);
    const on = await post(
      t.fastify,
      '/api/auth/passkeys/settings',
      browserHeaders(viaPasskey),
      { password_sign_in: true },
      'PUT',
    );
    assert.deepEqual([on.statusCode, on.json()], [200, { password_sign_in: true, can_change: true }]);
    assert.equal((await loginAs(t.fastify, 'alice', PASSWORDS.alice)).response.statusCode, 200);
  });

  test('password sign-in cannot go off without a passkey; deleting the last passkey turns it back on and ends its sessions', async () => {
    const carol = await login('carol');
    const none = await post(
      t.fastify,
      '/api/auth/passkeys/settings',
      browserHeaders(carol),
      { password_sign_in: false },
      'PUT',
    );
    assert.deepEqual(
      [none.statusCode, none.json()],
      [400, { detail: 'Create a passkey before turning password sign-in off.' }],
    );
    assert.deepEqual((await get('/api/auth/passkeys/settings', carol.cookie)).json(), {
      password_sign_in: true,
      can_change: false,
    });

    const { session, device, credential, passkey } = await enrolled();
    assert.equal(
      (
        await post(
          t.fastify,
          '/api/auth/passkeys/settings',
          browserHeaders(session),
          { password_sign_in: false },
          'PUT',
        )
      ).statusCode,
      200,
    );
    const viaPasskey = await passkeyLogin(t.fastify, device, credential);
    const other = await passkeyLogin(t.fastify, device, credential);
    assert.equal(other.response.statusCode, 200);
    // Deleted from the session that signed in with it: that one and the other passkey session end.
    const removed = await post(
      t.fastify,
      `/api/auth/passkeys/${passkey['id']}`,
      browserHeaders(viaPasskey),
      undefined,
      'DELETE',
    );
    assert.equal(removed.statusCode, 204);
    assert.match(String(removed.headers['set-cookie']), /sessionid="";/);
    assert.equal((await get('/api/auth/check', viaPasskey.cookie)).statusCode, 403);
    assert.equal((await get('/api/auth/check', other.cookie)).statusCode, 403);
    // The password session is untouched, and the password works again.
    assert.equal((await get('/api/auth/check', session.cookie)).statusCode, 200);
    assert.deepEqual((await get('/api/auth/passkeys/settings', session.cookie)).json(), {
      password_sign_in: true,
      can_change: false,
    });
    assert.equal((await loginAs(t.fastify, 'alice', PASSWORDS.alice)).response.statusCode, 200);
  });

  test('garbage, truncated and oversized bodies: 400 or 413, never a 500, nothing stored', async () => {
    const { session, device, credential } = await enrolled();
    const { options, cookie } = await authenticationOptions(t.fastify);
    const good = device.get(options, credential) as { response: Record<string, string> };
    const creation = await registrationOptions(t.fastify, session);
    const made = new SoftAuthenticator(ORIGIN).create(creation).response as {
      response: Record<string, string>;
    };
    const garbage = Buffer.from('\xff\xfe garbage that is no CBOR', 'latin1').toString('base64url');
    const big = (bytes: number) => Buffer.alloc(bytes, 0xa5).toString('base64url');
    const truncate = (text: string) => text.slice(0, Math.floor(text.length / 2));
    const signIns: unknown[] = [
      'not json',
      '{"credential": ',
      {},
      { credential: null },
      { credential: 'abc' },
      { credential: { ...good, response: { ...good.response, authenticatorData: garbage } } },
      {
        credential: {
          ...good,
          response: {
            ...good.response,
            authenticatorData: truncate(good.response['authenticatorData'] ?? ''),
          },
        },
      },
      { credential: { ...good, response: { ...good.response, clientDataJSON: garbage } } },
      { credential: { ...good, response: { ...good.response, signature: 'not base64url!' } } },
      { credential: { ...good, response: { ...good.response, authenticatorData: big(12_000) } } },
      { credential: { ...good, rawId: '' } },
      { credential: { ...good, response: { ...good.response, userHandle: 123 } } },
    ];
    for (const body of signIns) {
      const response = await t.fastify.inject({
        method: 'POST',
        url: '/api/auth/passkeys/login',
        headers: { cookie, 'content-type': 'application/json' },
        payload: typeof body === 'string' ? body : JSON.stringify(body),
      });
      assert.ok(
        [400, 403].includes(response.statusCode),
        `${JSON.stringify(body).slice(0, 80)}: ${response.statusCode} ${response.body}`,
      );
      assert.equal(setCookies(response).get('sessionid'), undefined);
    }
    const registrations: unknown[] = [
      { credential: { ...made, response: { ...made.response, attestationObject: garbage } } },
      {
        credential: {
          ...made,
          response: {
            ...made.response,
            attestationObject: truncate(made.response['attestationObject'] ?? ''),
          },
        },
      },
      { credential: { ...made, response: { ...made.response, attestationObject: big(12_000) } } },
      { credential: { ...made, response: { ...made.response, clientDataJSON: garbage } } },
      {
        credential: {
          ...made,
          response: {
            ...made.response,
            clientDataJSON: Buffer.from('{"challenge":7}').toString('base64url'),
          },
        },
      },
      { credential: made, name: 42 },
      { name: 'no credential' },
    ];
    for (const body of registrations) {
      const response = await post(t.fastify, '/api/auth/passkeys', browserHeaders(session), body);
      assert.equal(response.statusCode, 400, `${JSON.stringify(body).slice(0, 80)}: ${response.body}`);
    }
    // 1 MiB of CBOR in a field: over the body limit of contract §1.
    const huge = {
      credential: { ...made, response: { ...made.response, attestationObject: big(1024 * 1024) } },
    };
    const tooLarge = await post(t.fastify, '/api/auth/passkeys', browserHeaders(session), huge);
    assert.deepEqual([tooLarge.statusCode, tooLarge.json()], [413, { detail: 'Request body too large.' }]);
    const tooLargeLogin = await postLogin(t.fastify, cookie, {
      ...good,
      response: { ...good.response, signature: big(1024 * 1024) },
    });
    assert.equal(tooLargeLogin.statusCode, 413);
    assert.equal((await listOf(session)).length, 1);
    assert.ok(!t.logs.some((line) => line.includes('"level":50')), 'no error logged');
  });

  test('§1 and §7: Allow, OPTIONS, 405, and the CSRF check on every unsafe method', async () => {
    const { session, passkey } = await enrolled();
    const allows = {
      '/api/auth/passkeys': 'GET, HEAD, POST, OPTIONS',
      [`/api/auth/passkeys/${passkey['id']}`]: 'PATCH, DELETE, OPTIONS',
      '/api/auth/passkeys/settings': 'GET, HEAD, PUT, OPTIONS',
      '/api/auth/passkeys/registration': 'POST, OPTIONS',
      '/api/auth/passkeys/authentication': 'POST, OPTIONS',
      '/api/auth/passkeys/login': 'POST, OPTIONS',
    };
    for (const [url, allow] of Object.entries(allows)) {
      const options = await t.fastify.inject({ method: 'OPTIONS', url });
      assert.equal(options.headers['allow'], allow, url);
      const method = (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).find((m) => !allow.includes(m));
      const notAllowed = await t.fastify.inject({
        method: method ?? 'GET',
        url,
        headers: { cookie: session.cookie },
      });
      assert.deepEqual(
        [notAllowed.statusCode, notAllowed.headers['allow']],
        [405, allow],
        `${method} ${url}`,
      );
    }
    const crossSite = {
      ...browserHeaders(session),
      origin: 'https://evil.example',
      'sec-fetch-site': 'cross-site',
    };
    for (const [url, method] of [
      ['/api/auth/passkeys/registration', 'POST'],
      ['/api/auth/passkeys', 'POST'],
      ['/api/auth/passkeys/authentication', 'POST'],
      ['/api/auth/passkeys/login', 'POST'],
      ['/api/auth/passkeys/settings', 'PUT'],
      [`/api/auth/passkeys/${passkey['id']}`, 'DELETE'],
    ] as const) {
      const response = await post(t.fastify, url, crossSite, {}, method);
      assert.deepEqual(
        [response.statusCode, response.json()],
        [403, { detail: 'CSRF Failed: Origin checking failed.' }],
        url,
      );
    }
    assert.equal((await listOf(session)).length, 1);
  });

  test('audit lines and metrics: one per attempt, backend passkey, never a credential id or challenge', async () => {
    const { device, credential } = await enrolled();
    await passkeyLogin(t.fastify, device, credential);
    await passkeyLogin(t.fastify, device, credential, { userVerified: false });
    const lines = t.logs.filter(
      (line) => line.includes('"method":"passkey"') && line.includes('"audit":"login"'),
    );
    assert.ok(lines.some((line) => line.includes('"outcome":"success"')));
    assert.ok(lines.some((line) => line.includes('"failure":"bad_credentials"')));
    const id = credential.id.toString('base64url');
    assert.ok(!t.logs.some((line) => line.includes(id)), 'no credential id logged');
    const metrics = (await t.fastify.inject({ url: '/metrics' })).body;
    assert.match(
      metrics,
      /clubhouse_login_attempts_total\{outcome="success",failure="",backend="passkey"\} [1-9]/,
    );
    assert.match(
      metrics,
      /clubhouse_login_attempts_total\{outcome="failure",failure="bad_credentials",backend="passkey"\} [1-9]/,
    );
    assert.match(metrics, /clubhouse_passkey_registrations_total\{outcome="created"\} [1-9]/);
  });
});

describeEachStore('passkeys: policy and settings (contract §12)', (store) => {
  test('PASSKEYS_RETIRE_PASSWORD: the first passkey turns password sign-in off, and the switch is taken away', async () => {
    const backend = fakeAuthenticator(PASSWORDS);
    const t = await startTestApp({
      store,
      authenticator: backend,
      env: { PUBLIC_URL: ORIGIN, PASSKEYS_RETIRE_PASSWORD: 'true' },
    });
    try {
      const session = await loginAs(t.fastify, 'alice', PASSWORDS.alice);
      assert.deepEqual(
        (
          await t.fastify.inject({ url: '/api/auth/passkeys/settings', headers: { cookie: session.cookie } })
        ).json(),
        {
          password_sign_in: true,
          can_change: false,
        },
      );
      const device = new SoftAuthenticator(ORIGIN);
      const { response, credential } = await createPasskey(t.fastify, session, device);
      assert.equal(response.statusCode, 201, response.body);
      assert.deepEqual(
        (
          await t.fastify.inject({ url: '/api/auth/passkeys/settings', headers: { cookie: session.cookie } })
        ).json(),
        {
          password_sign_in: false,
          can_change: false,
        },
      );
      const on = await post(
        t.fastify,
        '/api/auth/passkeys/settings',
        browserHeaders(session),
        { password_sign_in: true },
        'PUT',
      );
      assert.deepEqual(
        [on.statusCode, on.json()],
        [403, { detail: 'Your organisation turns password sign-in off once you have a passkey.' }],
      );
      assert.equal((await loginAs(t.fastify, 'alice', PASSWORDS.alice)).response.statusCode, 403);
      assert.equal((await passkeyLogin(t.fastify, device, credential)).response.statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('PASSKEYS=off, or auto without a domain name in PUBLIC_URL: every passkey endpoint is 404', async () => {
    const envs: Record<string, string>[] = [
      { PUBLIC_URL: ORIGIN, PASSKEYS: 'off' },
      { PUBLIC_URL: 'http://127.0.0.1:8000' },
      {},
    ];
    for (const env of envs) {
      const t = await startTestApp({ store, authenticator: fakeAuthenticator(PASSWORDS), env });
      try {
        for (const url of [
          '/api/auth/passkeys',
          '/api/auth/passkeys/authentication',
          '/api/auth/passkeys/login',
          '/api/auth/passkeys/settings',
        ]) {
          const response = await t.fastify.inject({ method: 'POST', url });
          assert.deepEqual(
            [response.statusCode, response.json()],
            [404, { detail: 'Not found.' }],
            `${JSON.stringify(env)} ${url}`,
          );
        }
      } finally {
        await t.close();
      }
    }
  });
});
