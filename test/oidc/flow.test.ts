// Contract §10 on every store (describeEachStore: the flow store and the session store matter here): the whole sign-in
// at a real provider, through clubhouse's HTTP API, ends in the same session as a password login;
// a flow is taken once, on any instance sharing the store; the callback needs the browser's state
// cookie. Each refusal: a redirect to /?signin=failed, no session, the right audit class.
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, test } from 'node:test';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import {
  assertRefused,
  oidcAudits as audits,
  type OidcHarness,
  PUBLIC_URL,
  startOidcHarness,
  TestBrowser,
  untilCallback,
} from '../helpers/oidc.ts';
import { describeEachStore } from '../helpers/stores.ts';

let harness: OidcHarness;
before(async () => {
  harness = await startOidcHarness();
});
after(async () => {
  await harness?.stop();
});

describeEachStore('sign-in at an identity provider', (store) => {
  let app: TestApp;
  beforeEach(async () => {
    app = await startTestApp({ store, env: harness.env });
  });
  afterEach(async () => {
    await app.close();
  });

  test('start → provider → callback: a session like a password login’s, listed, ended by logout', async () => {
    const browser = new TestBrowser(app.fastify, harness.providerFetch);
    const { start, authorization, callback } = await untilCallback(
      browser,
      'school',
      'alice',
      'alice-provider-password',
      '/group/3',
    );
    // contract §10: the state cookie names the flow, for 10 minutes at most, on the OIDC paths only.
    const [flowCookie] = start.setCookies;
    assert.match(
      flowCookie ?? '',
      /^oidc_flow=[A-Za-z0-9_-]{43}; Max-Age=600; Path=\/api\/auth\/oidc\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/,
    );
    assert.equal(authorization.origin, harness.school.issuer);
    assert.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(
      authorization.searchParams.get('redirect_uri'),
      `${PUBLIC_URL}/api/auth/oidc/school/callback`,
    );
    for (const name of ['state', 'nonce', 'code_challenge'])
      assert.match(authorization.searchParams.get(name) ?? '', /^[A-Za-z0-9_-]{43}$/, name);
    // RFC 9207: the provider names itself in the response.
    assert.equal(callback.searchParams.get('iss'), harness.school.issuer);

    const done = await browser.get(callback.href);
    assert.equal(done.status, 302);
    assert.equal(done.location, `${PUBLIC_URL}/group/3`);
    assert.ok(
      done.setCookies.some((line) => line.startsWith('oidc_flow=; ')),
      'the state cookie is cleared',
    );
    assert.match(
      done.setCookies.find((l) => l.startsWith('sessionid=')) ?? '',
      /^sessionid=[a-z0-9]{32}; Max-Age=1209600; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/,
    );
    assert.match(
      done.setCookies.find((l) => l.startsWith('csrftoken=')) ?? '',
      /^csrftoken=[A-Za-z0-9]{32}; /,
    );

    // contract §3: the claim canonicalised (Alice.Liddell@School.Example).
    const check = await browser.get(`${PUBLIC_URL}/api/auth/check`);
    assert.equal(check.status, 200);
    assert.equal(check.body, '"alice.liddell@school.example"');
    const mine = await browser.get(`${PUBLIC_URL}/api/auth/sessions`);
    const sessions = JSON.parse(mine.body) as { current: boolean; user_agent: string; ip: string }[];
    assert.equal(sessions.length, 1);
    assert.deepEqual(
      sessions.map((s) => [s.current, s.user_agent, s.ip]),
      [[true, browser.userAgent, '127.0.0.1']],
    );
    const [line] = audits(app);
    assert.equal(line?.['outcome'], 'success');
    assert.equal(line?.['backend'], 'school');
    assert.equal(line?.['username'], 'alice.liddell@school.example');

    const logout = await app.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie: `sessionid=${browser.cookie(PUBLIC_URL, 'sessionid')}` },
    });
    assert.equal(logout.statusCode, 200);
    assert.equal(await app.stores.sessions.countActive(Date.now()), 0);
    const after = await app.fastify.inject({
      url: '/api/auth/check',
      headers: { cookie: `sessionid=${browser.cookie(PUBLIC_URL, 'sessionid')}` },
    });
    assert.equal(after.statusCode, 403);
  });

  test('a state is used once: the same callback again (a reload, a replay) is bad_state', async () => {
    const browser = new TestBrowser(app.fastify, harness.providerFetch);
    const { callback } = await untilCallback(browser, 'school', 'bob', 'bob-provider-password');
    const flow = browser.cookie(PUBLIC_URL, 'oidc_flow');
    assert.equal((await browser.get(callback.href)).status, 302);
    assert.equal(await app.stores.sessions.countActive(Date.now()), 1);
    // The same cookie and the same response, again (the browser cleared it; an attacker kept it).
    const again = new TestBrowser(app.fastify, harness.providerFetch);
    again.setCookie(PUBLIC_URL, 'oidc_flow', flow ?? '', '/api/auth/oidc/');
    assertRefused(await again.get(callback.href));
    assert.equal(audits(app).at(-1)?.['failure'], 'bad_state');
    assert.equal(await app.stores.sessions.countActive(Date.now()), 1, 'no second session');
  });

  test('a flow is taken once across instances: the replay at a second instance on the same store', async () => {
    const second = await startTestApp({ env: { ...app.storeEnv, ...harness.env } });
    try {
      const browser = new TestBrowser(app.fastify, harness.providerFetch);
      const { callback } = await untilCallback(browser, 'school', 'bob', 'bob-provider-password');
      const flow = browser.cookie(PUBLIC_URL, 'oidc_flow') ?? '';
      assert.equal((await browser.get(callback.href)).status, 302);
      const elsewhere = new TestBrowser(second.fastify, harness.providerFetch);
      elsewhere.setCookie(PUBLIC_URL, 'oidc_flow', flow, '/api/auth/oidc/');
      assertRefused(await elsewhere.get(callback.href));
      assert.equal(audits(second).at(-1)?.['failure'], 'bad_state');
    } finally {
      await second.close();
    }
  });

  test('a callback without the state cookie (login CSRF: an attacker’s code in a victim’s browser) is bad_state', async () => {
    const attacker = new TestBrowser(app.fastify, harness.providerFetch);
    const { callback } = await untilCallback(attacker, 'school', 'bob', 'bob-provider-password');
    const victim = new TestBrowser(app.fastify, harness.providerFetch);
    assertRefused(await victim.get(callback.href));
    assert.equal(audits(app).at(-1)?.['failure'], 'bad_state');
    assert.equal(await app.stores.sessions.countActive(Date.now()), 0);
  });

  test('the flow store keeps neither the state, the nonce, the verifier nor next readable', async () => {
    const browser = new TestBrowser(app.fastify, harness.providerFetch);
    const start = await browser.get(`${PUBLIC_URL}/api/auth/oidc/school/start?next=/group/42`);
    const authorization = new URL(start.location ?? '');
    const handle = browser.cookie(PUBLIC_URL, 'oidc_flow') ?? '';
    const dump = await app.dump();
    assert.ok(dump.length > 100, 'the flow is in the dump');
    const secrets = [
      authorization.searchParams.get('state'),
      authorization.searchParams.get('nonce'),
      handle,
      '/group/42',
    ];
    for (const secret of secrets) {
      assert.ok(secret !== null && !dump.includes(secret), 'not in clear');
      assert.ok(!dump.includes(Buffer.from(secret).toString('hex')), 'not in hex');
    }
  });

  test('a disabled user is user_disabled', async () => {
    await app.stores.users.recordLogin('dave@school.example', Date.now(), true);
    await app.stores.users.setActive('dave@school.example', false);
    const person = new TestBrowser(app.fastify, harness.providerFetch);
    const { callback } = await untilCallback(person, 'school', 'dave', 'dave-provider-password');
    assertRefused(await person.get(callback.href));
    assert.equal(audits(app).at(-1)?.['failure'], 'user_disabled');
    assert.equal(audits(app).at(-1)?.['username'], 'dave@school.example');
    assert.equal(await app.stores.sessions.countActive(Date.now()), 0);
  });

  test('with ALLOW_NEW_USERS=false, a new user is not_allowed and a known one signs in', async () => {
    const closed = await startTestApp({ env: { ...app.storeEnv, ...harness.env, ALLOW_NEW_USERS: 'false' } });
    try {
      const person = new TestBrowser(closed.fastify, harness.providerFetch);
      const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
      assertRefused(await person.get(callback.href));
      assert.equal(audits(closed).at(-1)?.['failure'], 'not_allowed');
      assert.equal(await closed.stores.sessions.countActive(Date.now()), 0);
      assert.equal(await closed.stores.users.get('bob@school.example'), null);

      await closed.stores.users.recordLogin('bob@school.example', Date.now(), true);
      const again = await untilCallback(person, 'school', 'bob', 'bob-provider-password');
      assert.equal((await person.get(again.callback.href)).location, `${PUBLIC_URL}/`);
      assert.equal(await closed.stores.sessions.countActive(Date.now()), 1);
    } finally {
      await closed.close();
    }
  });
});
