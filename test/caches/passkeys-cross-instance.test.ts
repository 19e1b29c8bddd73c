// Contract §12 across instances, on PostgreSQL and on PostgreSQL with sessions in Redis: a challenge
// issued by one instance is verified on another, once (the second instance's replay of it fails); a
// passkey deleted or password sign-in turned off on one instance is seen by the very next request
// to the other; the sessions that signed in with a deleted passkey end on both (the check answered
// from memory included); and two instances verifying the same signature counter at once let at most
// one through (the store's compare-and-set), the other flagging the passkey as cloned.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { storeOf } from '../helpers/stores.ts';
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
const PASSWORDS = { alice: 'alice-password', bob: 'bob-password' };

/** A GET over a real socket (the raw read path answers the check from memory). */
function ask(port: number, path: string, cookie: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { cookie }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

for (const kind of ['postgres', 'redis-postgres'] as const) {
  const store = storeOf(kind);
  describe(`passkeys across instances [${store.name}]`, () => {
    let a: TestApp;
    let b: TestApp;
    let bPort: number;
    before(async () => {
      const env = { PUBLIC_URL: ORIGIN };
      a = await startTestApp({ store, authenticator: fakeAuthenticator(PASSWORDS), env });
      b = await startTestApp({ env: { ...a.storeEnv, ...env }, authenticator: fakeAuthenticator(PASSWORDS) });
      bPort = Number(new URL(await b.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    test('a challenge from A is verified on B, once; a registration begun on A completes on B', async () => {
      const session = await loginAs(a.fastify, 'alice', PASSWORDS.alice);
      const device = new SoftAuthenticator(ORIGIN);
      const options = await registrationOptions(a.fastify, session);
      const created = device.create(options);
      const stored = await post(b.fastify, '/api/auth/passkeys', browserHeaders(session), {
        credential: created.response,
      });
      assert.equal(stored.statusCode, 201, stored.body);

      const challenge = await authenticationOptions(a.fastify);
      const assertion = device.get(challenge.options, created.credential);
      const onB = await postLogin(b.fastify, challenge.cookie, assertion);
      assert.equal(onB.statusCode, 200, onB.body);
      // Replayed on A (or B again): the challenge was taken once, for every instance.
      assert.equal((await postLogin(a.fastify, challenge.cookie, assertion)).statusCode, 403);
      assert.equal((await postLogin(b.fastify, challenge.cookie, assertion)).statusCode, 403);
    });

    test('a passkey deleted on A: its sessions end on B at once, and it signs nobody in on B', async () => {
      const session = await loginAs(a.fastify, 'bob', PASSWORDS.bob);
      const device = new SoftAuthenticator(ORIGIN);
      const { response, credential } = await createPasskey(a.fastify, session, device);
      assert.equal(response.statusCode, 201, response.body);
      const id = String(response.json().id);
      const signedIn = await passkeyLogin(b.fastify, device, credential);
      assert.equal(signedIn.response.statusCode, 200);
      // B answers the check from memory.
      assert.equal(await ask(bPort, '/api/auth/check', signedIn.cookie), 200);
      assert.equal(await ask(bPort, '/api/auth/check', signedIn.cookie), 200);
      const removed = await post(
        a.fastify,
        `/api/auth/passkeys/${id}`,
        browserHeaders(session),
        undefined,
        'DELETE',
      );
      assert.equal(removed.statusCode, 204, removed.body);
      assert.equal(await ask(bPort, '/api/auth/check', signedIn.cookie), 403);
      assert.equal((await passkeyLogin(b.fastify, device, credential)).response.statusCode, 403);
      // The password session that deleted it lives on.
      assert.equal(await ask(bPort, '/api/auth/check', session.cookie), 200);
    });

    test('password sign-in turned off on A refuses the password on B at the very next request', async () => {
      const session = await loginAs(b.fastify, 'alice', PASSWORDS.alice);
      const off = await post(
        a.fastify,
        '/api/auth/passkeys/settings',
        browserHeaders(session),
        { password_sign_in: false },
        'PUT',
      );
      assert.equal(off.statusCode, 200, off.body);
      assert.equal((await loginAs(b.fastify, 'alice', PASSWORDS.alice)).response.statusCode, 403);
      const on = await post(
        b.fastify,
        '/api/auth/passkeys/settings',
        browserHeaders(session),
        { password_sign_in: true },
        'PUT',
      );
      assert.equal(on.statusCode, 200, on.body);
      assert.equal((await loginAs(a.fastify, 'alice', PASSWORDS.alice)).response.statusCode, 200);
    });

    test('the same signature counter on two instances at once: at most one signs in, the passkey is flagged', async () => {
      const session = await loginAs(a.fastify, 'bob', PASSWORDS.bob);
      const device = new SoftAuthenticator(ORIGIN);
      const { response, credential } = await createPasskey(a.fastify, session, device);
      assert.equal(response.statusCode, 201, response.body);
      // A cloned authenticator: two copies of the key at the same counter, signing at the same time.
      const [one, two] = await Promise.all([
        authenticationOptions(a.fastify),
        authenticationOptions(b.fastify),
      ]);
      const first = device.get(one.options, credential, { counter: 7 });
      const second = device.get(two.options, credential, { counter: 7 });
      const answers = await Promise.all([
        postLogin(a.fastify, one.cookie, first),
        postLogin(b.fastify, two.cookie, second),
      ]);
      assert.deepEqual(answers.map((r) => r.statusCode).sort(), [200, 403]);
      const [listed] = (
        await b.fastify.inject({ url: '/api/auth/passkeys', headers: { cookie: session.cookie } })
      ).json();
      assert.equal(listed.cloned, true);
    });
  });
}
