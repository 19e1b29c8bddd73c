// Contract §12: `clubhouse passkeys list|remove|reset` on the database the server has open. Reset is
// the recovery for a lost phone: every passkey gone, password sign-in back on, every session ended.
// Each change is audited, without a credential id.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { browserHeaders, createPasskey, passkeyLogin, post, SoftAuthenticator } from '../helpers/webauthn.ts';

const ORIGIN = 'http://localhost:8000';
const PASSWORDS = { alice: 'alice-password', bob: 'bob-password' };

describe('clubhouse passkeys (contract §12)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ authenticator: fakeAuthenticator(PASSWORDS), env: { PUBLIC_URL: ORIGIN } });
  });
  after(() => t.close());

  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const log: string[] = [];
    const code = await runCli(argv, t.storeEnv, {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      log: (line) => log.push(line),
    });
    return { code, out: out.join('\n'), err: err.join('\n'), log: log.join('') };
  };
  const check = async (cookie: string) =>
    (await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } })).statusCode;

  test('list, remove one (its sessions end), reset (all gone, password back on, every session ended)', async () => {
    const session = await loginAs(t.fastify, 'alice', PASSWORDS.alice);
    const phone = new SoftAuthenticator(ORIGIN);
    const laptop = new SoftAuthenticator(ORIGIN);
    const first = await createPasskey(t.fastify, session, phone, { name: 'Phone' });
    const second = await createPasskey(t.fastify, session, laptop, { name: 'Laptop' });
    assert.equal(first.response.statusCode, 201);
    assert.equal(second.response.statusCode, 201);
    const phoneId = String(first.response.json().id);
    const off = await post(
      t.fastify,
      '/api/auth/passkeys/settings',
      browserHeaders(session),
      { password_sign_in: false },
      'PUT',
    );
    assert.equal(off.statusCode, 200);

    const listed = await cli('passkeys', 'list', 'alice', '--json');
    assert.equal(listed.code, 0, listed.err);
    const report = JSON.parse(listed.out);
    assert.equal(report.passwordSignIn, false);
    assert.deepEqual(report.passkeys.map((p: { name: string }) => p.name).sort(), ['Laptop', 'Phone']);
    const text = await cli('passkeys', 'list', 'alice');
    assert.match(text.out, /^Password sign-in: off\.\n/);
    assert.match(text.out, new RegExp(`^${phoneId}\\tPhone\\tcreated `, 'm'));

    const viaPhone = await passkeyLogin(t.fastify, phone, first.credential);
    const viaLaptop = await passkeyLogin(t.fastify, laptop, second.credential);
    const removed = await cli('passkeys', 'remove', 'alice', phoneId);
    assert.equal(removed.code, 0, removed.err);
    assert.equal(removed.out, `Removed passkey ${phoneId} of alice; ended 1 sessions.`);
    assert.match(removed.log, /"audit":"passkey","action":"delete","username":"alice"/);
    assert.equal(await check(viaPhone.cookie), 403);
    assert.equal(await check(viaLaptop.cookie), 200);
    assert.equal((await cli('passkeys', 'remove', 'alice', phoneId)).code, 1);
    assert.equal(
      (await cli('passkeys', 'remove', 'bob', String(second.response.json().id))).code,
      1,
      "not bob's",
    );

    // The lost phone: reset.
    const reset = await cli('passkeys', 'reset', 'alice');
    assert.equal(reset.code, 0, reset.err);
    assert.match(reset.out, /^Removed 1 passkeys of alice; password sign-in is on; ended [2-9] sessions\.$/);
    assert.match(reset.log, /"audit":"passkey","action":"reset","username":"alice","passkeysRemoved":1/);
    assert.equal(await check(viaLaptop.cookie), 403);
    assert.equal(await check(session.cookie), 403);
    assert.equal((await passkeyLogin(t.fastify, laptop, second.credential)).response.statusCode, 403);
    assert.equal((await loginAs(t.fastify, 'alice', PASSWORDS.alice)).response.statusCode, 200);
    assert.match(
      (await cli('passkeys', 'list', 'alice')).out,
      /^Password sign-in: on\.\nNo passkeys of alice\.$/,
    );
    for (const run of [removed, reset]) {
      const id = first.credential.id.toString('base64url');
      assert.ok(!run.log.includes(id) && !run.out.includes(id), 'no credential id printed or logged');
    }
    assert.equal((await cli('passkeys', 'reset', 'nobody')).code, 1);
  });
});
