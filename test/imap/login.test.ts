// Contract §3, §5: logins checked against a real Dovecot over implicit TLS, STARTTLS and plain
// loopback, with the awkward passwords, the concurrency and single-flight guarantees, and the
// classification of what went wrong.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { dovecotEnv, loginAs as login, startTestApp, type TestApp } from '../helpers/app.ts';
import { type Dovecot, startDovecot, TEST_USERS, testUser } from '../helpers/dovecot.ts';

/** Every session id and CSRF token handed out in this file, to prove none reaches a log line. */
const issued: string[] = [];

async function loginAs(fastify: FastifyInstance, username: string, password: string, remoteAddress?: string) {
  const result = await login(fastify, username, password, {}, remoteAddress);
  for (const secret of [result.sessionid, result.csrftoken]) if (secret !== '') issued.push(secret);
  return result;
}

function auditLines(t: TestApp): { username: string; outcome: string; failure?: string; reason?: string }[] {
  return t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
}

describe('logins against a real Dovecot', () => {
  let dovecot: Dovecot;
  let tlsApp: TestApp;
  let starttlsApp: TestApp;
  let plainApp: TestApp;
  before(async () => {
    dovecot = await startDovecot();
    tlsApp = await startTestApp({ dovecot });
    starttlsApp = await startTestApp({ dovecot, env: dovecotEnv(dovecot, 'starttls') });
    plainApp = await startTestApp({
      dovecot,
      env: { ...dovecotEnv(dovecot, 'plain'), IMAP_HOST: '127.0.0.1' },
    });
  });
  after(async () => {
    await Promise.all([tlsApp.close(), starttlsApp.close(), plainApp.close()]);
    await dovecot.stop();
  });

  for (const [name, app] of [
    ['implicit TLS with the harness CA', () => tlsApp],
    ['required STARTTLS', () => starttlsApp],
    ['plain to loopback', () => plainApp],
  ] as const) {
    test(`${name}: the right password logs in, a wrong one gets 403`, async () => {
      const t = app();
      const ok = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(ok.response.statusCode, 200);
      assert.equal(ok.response.body, '"alice"');
      const check = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie: ok.cookie } });
      assert.equal(check.body, '"alice"');
      const wrong = await loginAs(t.fastify, 'bob', 'not-bobs-password');
      assert.equal(wrong.response.statusCode, 403);
      assert.deepEqual(wrong.response.json(), { detail: 'Cannot log you in' });
      assert.equal(auditLines(t).at(-1)?.failure, 'bad_credentials');
    });
  }

  for (const username of ['uma', 'quinn', 'percy', 'long']) {
    test(`the password of ${username} (non-ASCII, quotes, backslash, %, $, 1024 characters) logs in`, async () => {
      const { password } = testUser(username);
      for (const t of [tlsApp, starttlsApp]) {
        const { response } = await loginAs(t.fastify, username, password);
        assert.equal(response.statusCode, 200, `${username} over ${t === tlsApp ? 'TLS' : 'STARTTLS'}`);
        assert.equal(response.body, JSON.stringify(username));
      }
    });
  }

  test('100 concurrent logins of different users all succeed, each session answering its own user', async () => {
    const users = Array.from({ length: 100 }, (_, i) => testUser(`user${String(i).padStart(3, '0')}`));
    // From 100 addresses: from one, logins in flight count toward its limit of 50 (contract §3).
    const logins = await Promise.all(
      users.map((u, i) => loginAs(tlsApp.fastify, u.username, u.password, `198.51.100.${i + 1}`)),
    );
    assert.deepEqual(
      logins.map((l) => l.response.statusCode),
      users.map(() => 200),
    );
    const checks = await Promise.all(
      logins.map((l) => tlsApp.fastify.inject({ url: '/api/auth/check', headers: { cookie: l.cookie } })),
    );
    assert.deepEqual(
      checks.map((c) => c.body),
      users.map((u) => JSON.stringify(u.username)),
    );
    assert.equal(new Set(logins.map((l) => l.sessionid)).size, 100);
  });

  test('50 concurrent identical attempts cause one IMAP login and 50 distinct sessions', async () => {
    const before = await dovecot.loginCount('carol');
    const logins = await Promise.all(
      Array.from({ length: 50 }, () => loginAs(tlsApp.fastify, 'carol', 'carol-password')),
    );
    assert.ok(logins.every((l) => l.response.statusCode === 200));
    assert.equal(new Set(logins.map((l) => l.sessionid)).size, 50);
    assert.equal((await dovecot.loginCount('carol')) - before, 1);
  });

  test('no password, session id or CSRF token reaches a log line', async () => {
    const ok = await loginAs(tlsApp.fastify, 'dave', 'dave-password');
    await tlsApp.fastify.inject({
      url: '/api/auth/check',
      headers: { cookie: ok.cookie, 'x-csrftoken': ok.csrftoken },
    });
    await tlsApp.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie: ok.cookie, 'x-csrftoken': ok.csrftoken },
    });
    const logs = [tlsApp, starttlsApp, plainApp].flatMap((t) => t.logs).join('\n');
    assert.ok(issued.length > 300);
    for (const secret of [...TEST_USERS.map((u) => u.password), 'not-bobs-password', ...issued]) {
      assert.ok(!logs.includes(secret), `a log line holds a secret (${secret.slice(0, 3)}…)`);
    }
  });

  test('a certificate that does not verify: 403, classified upstream_misconfigured, no password sent', async () => {
    // The system roots do not include the harness CA.
    const t = await startTestApp({ dovecot, env: { IMAP_CA_FILE: '' } });
    try {
      const before = await dovecot.loginCount('alice');
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      const audit = auditLines(t).at(-1);
      assert.equal(audit?.failure, 'upstream_misconfigured');
      assert.match(audit?.reason ?? '', /^TLS: /);
      assert.equal(await dovecot.loginCount('alice'), before);
    } finally {
      await t.close();
    }
  });
});

describe('a mail server that is misconfigured', () => {
  test('STARTTLS required but not offered: refused as upstream_misconfigured', async () => {
    const dovecot = await startDovecot({ tls: false });
    const t = await startTestApp({ dovecot, env: dovecotEnv(dovecot, 'starttls') });
    try {
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(response.statusCode, 403);
      const audit = auditLines(t).at(-1);
      assert.equal(audit?.failure, 'upstream_misconfigured');
      assert.equal(audit?.reason, 'STARTTLS not offered');
      assert.equal(await dovecot.loginCount(), 0);
    } finally {
      await t.close();
      await dovecot.stop();
    }
  });

  test('LOGINDISABLED on a plain connection: refused as upstream_misconfigured', async () => {
    const dovecot = await startDovecot({ loginDisabled: true });
    const t = await startTestApp({
      dovecot,
      env: { ...dovecotEnv(dovecot, 'plain'), IMAP_HOST: '127.0.0.1' },
    });
    try {
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(response.statusCode, 403);
      assert.equal(auditLines(t).at(-1)?.failure, 'upstream_misconfigured');
      assert.equal(await dovecot.loginCount(), 0);
    } finally {
      await t.close();
      await dovecot.stop();
    }
  });
});

describe("Dovecot's real failure delay", () => {
  test('while Dovecot delays a refusal, other requests are answered', async () => {
    const dovecot = await startDovecot({ authFailureDelay: 2 });
    const t = await startTestApp({ dovecot });
    try {
      const order: string[] = [];
      const login = loginAs(t.fastify, 'alice', 'wrong-password').then((l) => {
        order.push('login');
        return l;
      });
      // Once the attempt holds its IMAP slot, Dovecot holds the refusal (auth_failure_delay, which
      // harness.test.ts reads back); a request made now is answered while the login still waits.
      const inFlight = async () =>
        /^clubhouse_imap_in_flight 1$/m.test((await t.fastify.inject({ url: '/metrics' })).body);
      while (order.length === 0 && !(await inFlight())) await new Promise((resolve) => setImmediate(resolve));
      const check = await t.fastify.inject({ url: '/api/auth/check' });
      order.push('check');
      assert.equal(check.statusCode, 403);
      const { response } = await login;
      assert.equal(response.statusCode, 403);
      assert.deepEqual(order, ['check', 'login'], 'the service is not blocked by a slow IMAP answer');
      assert.equal(auditLines(t).at(-1)?.failure, 'bad_credentials');
      const ok = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(ok.response.statusCode, 200);
    } finally {
      await t.close();
      await dovecot.stop();
    }
  });
});

// docs/backends.md "Dovecot behind clubhouse": with login_trusted_networks naming this service,
// IMAP_FORWARD_CLIENT_IP makes Dovecot attribute a login to the client's address (its `rip`), which
// is what its per-IP auth penalty and its logs key on, instead of to this service's own address.
describe('the Dovecot recipe: login_trusted_networks with IMAP_FORWARD_CLIENT_IP', () => {
  for (const trusted of [true, false]) {
    test(`${trusted ? 'trusted' : 'not trusted'}: a refused guess is Dovecot's failure from ${trusted ? 'the guesser' : 'the service'}`, async () => {
      const dovecot = await startDovecot(trusted ? { trustedNetworks: '127.0.0.1/32' } : {});
      const t = await startTestApp({ dovecot, env: { IMAP_FORWARD_CLIENT_IP: 'true' } });
      try {
        const response = await t.fastify.inject({
          method: 'POST',
          url: '/api/auth/login',
          remoteAddress: '203.0.113.77',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username: 'alice', password: 'a wrong guess' }),
        });
        assert.equal(response.statusCode, 403);
        let line = '';
        for (let reads = 0; reads < 50 && line === ''; reads++) {
          line = (await dovecot.log()).split('\n').find((entry) => /auth failed/.test(entry)) ?? '';
          if (line === '') await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.match(line, trusted ? /rip=203\.0\.113\.77\b/ : /rip=127\.0\.0\.1\b/, line);
      } finally {
        await t.close();
        await dovecot.stop();
      }
    });
  }
});
