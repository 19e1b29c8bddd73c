// Contract §3, one person one identity, through the HTTP API on every store: width and case variants
// of a name are one user (one row, one disable, one throttle count), and compatibility look-alikes
// are refused before any backend is asked.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Authenticator } from '../../src/backends/authenticator.ts';
import { runCli } from '../../src/cli/main.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const CANNOT = '{"detail":"Cannot log you in"}';

/** The fake of helpers/app.ts, also recording the usernames it was asked about. */
function recordingAuthenticator(passwords: Record<string, string>): Authenticator & {
  asked: string[];
  calls(): number;
} {
  const fake = fakeAuthenticator(passwords);
  const asked: string[] = [];
  return {
    ...fake,
    asked,
    calls: () => fake.calls,
    verify: (username, password, ip) => {
      asked.push(username);
      return fake.verify(username, password, ip);
    },
  };
}

const check = async (t: TestApp, cookie: string) =>
  (await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } })).body;

const guess = (t: TestApp, username: string, password: string, ip: string) =>
  t.fastify.inject({
    method: 'POST',
    url: '/api/auth/login',
    remoteAddress: ip,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ username, password }),
  });

describeEachStore('one identity per person (UsernameCaseMapped)', (store) => {
  let t: TestApp;
  let fake: ReturnType<typeof recordingAuthenticator>;
  before(async () => {
    fake = recordingAuthenticator({ lena: 'lena-pw' });
    t = await startTestApp({ store, authenticator: fake });
  });
  after(() => t.close());

  test('ＬＥＮＡ, ｌｅｎａ, LENA and lena log in as "lena", one user, the backend asked for lena', async () => {
    for (const variant of ['ＬＥＮＡ', 'ｌｅｎａ', 'LENA', 'lena']) {
      const { response, cookie } = await loginAs(t.fastify, variant, 'lena-pw');
      assert.equal(response.statusCode, 200, variant);
      assert.equal(response.body, '"lena"', variant);
      assert.equal(await check(t, cookie), '"lena"', variant);
    }
    assert.deepEqual(fake.asked, ['lena', 'lena', 'lena', 'lena']);
    assert.deepEqual(
      (await t.stores.users.list()).map((u) => u.username),
      ['lena'],
    );
  });

  test('𝐥𝐞𝐧𝐚, ⓛⓔⓝⓐ and other look-alikes get 403 without the authenticator being called', async () => {
    const calls = fake.calls();
    for (const variant of ['𝐥𝐞𝐧𝐚', 'ⓛⓔⓝⓐ', 'ｌｅｎａ²', 'le\u200bna', 'le\u00adna', 'lena♥']) {
      const { response } = await loginAs(t.fastify, variant, 'lena-pw');
      assert.equal(response.statusCode, 403, variant);
      assert.equal(response.body, CANNOT, variant);
    }
    assert.equal(fake.calls(), calls, 'no backend was asked');
    const audit = t.logs.filter((line) => line.includes('rejected_input') && line.includes('𝐥𝐞𝐧𝐚'));
    assert.equal(audit.length > 0, true, 'the audit line names the username as sent');
    assert.deepEqual(
      (await t.stores.users.list()).map((u) => u.username),
      ['lena'],
    );
  });

  test('the throttle counts every variant as one username: the 6th wrong guess gets 429', async () => {
    const variants = ['ＬＥＮＡ', 'ｌｅｎａ', 'LENA', 'lena', 'Lena'];
    for (const [i, variant] of variants.entries()) {
      const response = await guess(t, variant, `wrong-${i}`, '198.51.100.22');
      assert.equal(response.statusCode, 403, variant);
    }
    const sixth = await guess(t, 'ｌＥｎＡ', 'wrong-6', '198.51.100.22');
    assert.equal(sixth.statusCode, 429);
    await t.stores.throttle.clear('u:lena');
  });

  test('`user disable lena` stops every variant, and ＬＥＮＡ on the command line is lena', async () => {
    const sessions = [];
    for (const variant of ['ＬＥＮＡ', 'lena'])
      sessions.push((await loginAs(t.fastify, variant, 'lena-pw')).cookie);
    const out: string[] = [];
    const code = await runCli(['user', 'disable', 'ＬＥＮＡ'], t.storeEnv, {
      out: (text) => out.push(text),
      err: (text) => out.push(text),
    });
    assert.equal(code, 0, out.join('\n'));
    assert.match(out[0] ?? '', /^Disabled lena; ended \d+ sessions\.$/);
    for (const cookie of sessions) assert.equal(await check(t, cookie), '""');
    for (const variant of ['ＬＥＮＡ', 'ｌｅｎａ', 'LENA', 'lena']) {
      const { response } = await loginAs(t.fastify, variant, 'lena-pw');
      assert.equal(response.statusCode, 403, variant);
    }
  });
});

describeEachStore('one identity per person (UsernameCasePreserved)', (store) => {
  let t: TestApp;
  let fake: ReturnType<typeof recordingAuthenticator>;
  before(async () => {
    fake = recordingAuthenticator({ LENA: 'upper-pw', lena: 'lower-pw' });
    t = await startTestApp({ store, authenticator: fake, env: { USERNAME_CASE: 'preserve' } });
  });
  after(() => t.close());

  test('LENA and lena are two users, ＬＥＮＡ is LENA', async () => {
    for (const [variant, password, answer] of [
      ['ＬＥＮＡ', 'upper-pw', '"LENA"'],
      ['LENA', 'upper-pw', '"LENA"'],
      ['lena', 'lower-pw', '"lena"'],
      ['ｌｅｎａ', 'lower-pw', '"lena"'],
    ] as const) {
      const { response, cookie } = await loginAs(t.fastify, variant, password);
      assert.equal(response.statusCode, 200, variant);
      assert.equal(response.body, answer, variant);
      assert.equal(await check(t, cookie), answer, variant);
    }
    assert.deepEqual(fake.asked, ['LENA', 'LENA', 'lena', 'lena']);
    assert.deepEqual(
      (await t.stores.users.list()).map((u) => u.username),
      ['LENA', 'lena'],
    );
  });

  test('𝐥𝐞𝐧𝐚 and ⓛⓔⓝⓐ get 403 without the authenticator being called', async () => {
    const calls = fake.calls();
    for (const variant of ['𝐥𝐞𝐧𝐚', 'ⓛⓔⓝⓐ', '𝐋𝐄𝐍𝐀']) {
      const { response } = await loginAs(t.fastify, variant, 'lower-pw');
      assert.equal(response.statusCode, 403, variant);
      assert.equal(response.body, CANNOT, variant);
    }
    assert.equal(fake.calls(), calls);
  });
});
