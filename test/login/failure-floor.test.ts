// Contract §3: a refused login is answered no sooner than AUTH_FAILURE_DELAY_MS after it began,
// whatever the backend; a refusal decided without the backend waits as long as the backend's refusal
// would, and no less than that floor; identical attempts in flight, refused by a backend or decided
// here, are answered together. Proved on a clock that moves only when the backend works or the login
// procedure waits, so every wait is known exactly.
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import type { Authenticator, VerifyResult } from '../../src/backends/authenticator.ts';
import { createImapBackend, type ImapSeams } from '../../src/backends/imap/backend.ts';
import type { ImapSettings } from '../../src/backends/imap/settings.ts';
import { FAKE_CHAIN, startTestApp, type TestApp } from '../helpers/app.ts';

/** The IMAP backend of these settings with scripted seams (its logins never connect). */
const imapBackend = (imap: ImapSettings, seams: ImapSeams) =>
  createImapBackend({ kind: 'imap', name: 'imap', domains: null, imap }, undefined, seams);

const FLOOR = 500;

/** A backend on the test clock: each login lasts `ms` of it; wrong passwords are refused. */
function clockedBackend(clock: { ms: number }, ms: number, imitated: () => number = () => 0) {
  const backend = {
    calls: 0,
    async verify(username: string, password: string): Promise<VerifyResult> {
      backend.calls++;
      await new Promise((resolve) => setTimeout(resolve, 20));
      clock.ms += ms;
      return password === `${username}-password`
        ? { ok: true }
        : { ok: false, failure: 'bad_credentials', reason: 'wrong password' };
    },
    refusalDelayMs: imitated,
    maxVerifyMs: 10_000,
    ...FAKE_CHAIN,
  } satisfies Authenticator & Record<string, unknown>;
  return backend;
}

/** An app whose refusals wait on the test clock, each wait recorded as asked. */
async function clockedApp(
  authenticator: Authenticator,
  clock: { ms: number },
  env: Record<string, string> = {},
) {
  const waits: number[] = [];
  const app = await startTestApp({
    authenticator,
    env: { AUTH_FAILURE_DELAY_MS: String(FLOOR), ...env },
    loginNow: () => clock.ms,
    // Each wait also lasts a little real time, long enough for a burst's attempts all to arrive.
    sleep: async (ms) => {
      waits.push(ms);
      await new Promise((resolve) => setTimeout(resolve, 50));
      clock.ms += ms;
    },
  });
  return { app, waits };
}

const login = (t: TestApp, username: string, password: string, ip = '198.51.100.7') =>
  t.fastify.inject({
    method: 'POST',
    url: '/api/auth/login',
    remoteAddress: ip,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ username, password }),
  });

async function disable(t: TestApp, username: string) {
  await t.stores.users.recordLogin(username, Date.now(), true);
  await t.stores.users.setActive(username, false);
}

describe('the failure floor (AUTH_FAILURE_DELAY_MS)', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  test('a refusal by the backend is answered at the floor, counted from when the attempt began', async () => {
    const clock = { ms: 0 };
    const backend = clockedBackend(clock, 30);
    const { app, waits } = await clockedApp(backend, clock);
    t = app;
    assert.equal((await login(app, 'alice', 'wrong')).statusCode, 403);
    assert.deepEqual(waits, [FLOOR - 30], 'the floor, not the floor added to the backend');
    assert.equal((await login(app, 'alice', 'alice-password')).statusCode, 200);
    assert.deepEqual(waits, [FLOOR - 30], 'a success never waits');
  });

  test('a backend slower than the floor is not slowed further', async () => {
    const clock = { ms: 0 };
    const { app, waits } = await clockedApp(clockedBackend(clock, 800), clock);
    t = app;
    assert.equal((await login(app, 'alice', 'wrong')).statusCode, 403);
    assert.deepEqual(waits, []);
  });

  test("a refusal decided here waits the backend's refusal time, and never less than the floor", async () => {
    const clock = { ms: 0 };
    let imitated = 200;
    const { app, waits } = await clockedApp(
      clockedBackend(clock, 30, () => imitated),
      clock,
    );
    t = app;
    await disable(app, 'dave');
    assert.equal((await login(app, 'dave', 'dave-password')).statusCode, 403);
    imitated = 900;
    assert.equal((await login(app, 'dave', 'other-password')).statusCode, 403);
    assert.equal((await login(app, 'mallory\u0007', 'pw')).statusCode, 403);
    assert.deepEqual(waits, [FLOOR, 900, 900]);
  });

  test('AUTH_FAILURE_DELAY_MS=0 turns the floor off', async () => {
    const clock = { ms: 0 };
    const { app, waits } = await clockedApp(clockedBackend(clock, 30), clock, { AUTH_FAILURE_DELAY_MS: '0' });
    t = app;
    assert.equal((await login(app, 'alice', 'wrong')).statusCode, 403);
    assert.deepEqual(waits, []);
  });
});

// Six identical attempts for a disabled user once each waited their own draw and ended spread over
// ~700 ms, where six for an active user with a wrong password ended together.
describe('identical attempts in flight are answered together', () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  for (const [kind, setUp, username] of [
    ['a disabled user (decided here)', (app: TestApp) => disable(app, 'dave'), 'dave'],
    ['a wrong password (decided by the backend)', async () => undefined, 'alice'],
    ['a control character (refused before admission)', async () => undefined, 'eve\u0001'],
  ] as const) {
    test(kind, async () => {
      const clock = { ms: 0 };
      // Every draw differs: attempts that waited each their own would be told apart by their waits.
      let draw = 300;
      const backend = clockedBackend(clock, 30, () => (draw += 97));
      const { app, waits } = await clockedApp(backend, clock);
      t = app;
      await setUp(app);
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => login(app, username, 'same-guess', `203.0.113.${i + 1}`)),
      );
      assert.deepEqual(
        answers.map((answer) => answer.statusCode),
        [403, 403, 403, 403, 403, 403],
      );
      assert.equal(waits.length, 1, `one wait for all six, not ${waits.join(', ')}`);
      assert.ok(backend.calls <= 1, 'at most one verification');
    });
  }

  test('different passwords are not one attempt: each waits its own', async () => {
    const clock = { ms: 0 };
    const backend = clockedBackend(clock, 30);
    const { app, waits } = await clockedApp(backend, clock);
    t = app;
    await disable(app, 'dave');
    await Promise.all(Array.from({ length: 3 }, (_, i) => login(app, 'dave', `guess-${i}`)));
    assert.equal(waits.length, 3);
  });
});

// While the breaker is open the backend path answers at once, so a
// refusal decided here must not wait the backend's usual ~2 s either; both answer at the floor.
describe('while the backend fails fast, so does the imitation of its refusals', () => {
  test('the breaker open: the IMAP refusal delay is 0, then the recorded refusals again', async () => {
    let now = 0;
    let down = false;
    const auth = imapBackend(
      {
        host: '127.0.0.1',
        port: 1,
        security: 'plain',
        caFile: null,
        timeoutMs: 1000,
        maxConcurrency: 1,
        queueLimit: 0,
        forwardClientIp: false,
      },
      {
        now: () => now,
        login: async () => {
          now += 1234;
          return down
            ? { ok: false, failure: 'upstream_unavailable', reason: 'ECONNREFUSED' }
            : { ok: false, failure: 'bad_credentials', reason: 'IMAP NO' };
        },
      },
    );
    await auth.verify('alice', 'wrong', '192.0.2.1');
    assert.equal(auth.refusalDelayMs(), 1234);
    down = true;
    for (let i = 0; i < 5; i++) await auth.verify('alice', `pw${i}`, '192.0.2.1');
    assert.equal(auth.stats().breaker, 'open');
    assert.equal(auth.refusalDelayMs(), 0, 'an attempt now would be refused at once');
  });

  test('the queue full: the refusal delay is 0 while it is', async () => {
    let now = 0;
    let release: () => void = () => undefined;
    const auth = imapBackend(
      {
        host: '127.0.0.1',
        port: 1,
        security: 'plain',
        caFile: null,
        timeoutMs: 5000,
        maxConcurrency: 1,
        queueLimit: 0,
        forwardClientIp: false,
      },
      {
        now: () => now,
        login: () =>
          new Promise((resolve) => {
            release = () => {
              now += 777;
              resolve({ ok: false, failure: 'bad_credentials', reason: 'IMAP NO' });
            };
          }),
      },
    );
    const first = auth.verify('alice', 'one', '192.0.2.1');
    assert.equal(auth.refusalDelayMs(), 0, 'every slot busy and no room to wait');
    release();
    await first;
    assert.equal(auth.refusalDelayMs(), 777, 'a slot free again: the refusal it recorded');
  });
});
