// Contract §3 (issue 12, defect 3): a refusal decided without the authentication backend (a disabled
// user, a user not allowed, input refused before IMAP) takes as long as a refused password at the
// backend would. Measured against the harness Dovecot with its real 2 s failure delay and compared
// as a ratio of medians: never an absolute bound, which a loaded machine would break.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { fakeAuthenticator, startTestApp, type TestApp } from './helpers/app.ts';
import { type Dovecot, startDovecot } from './helpers/dovecot.ts';
import { referenceTimer } from './helpers/reference-timer.ts';

const ROUNDS = 5;

/** Milliseconds one login takes, and its status. */
async function timedLogin(
  fastify: FastifyInstance,
  username: string,
  password: string,
): Promise<{ ms: number; status: number }> {
  const started = performance.now();
  const response = await fastify.inject({
    method: 'POST',
    url: '/api/auth/login',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ username, password }),
  });
  return { ms: performance.now() - started, status: response.statusCode };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function failures(t: TestApp): string[] {
  return t.logs
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.audit === 'login')
    .map((entry) => String(entry.failure));
}

describe("refusals decided without IMAP take as long as Dovecot's refusal of a wrong password", () => {
  let dovecot: Dovecot;
  let open: TestApp;
  let closed: TestApp;
  before(async () => {
    dovecot = await startDovecot({ authFailureDelay: 2 });
    [open, closed] = await Promise.all([
      startTestApp({ dovecot }),
      startTestApp({ dovecot, env: { ALLOW_NEW_USERS: 'false' } }),
    ]);
    const now = Date.now();
    // dave is disabled; with ALLOW_NEW_USERS=false only alice exists, so "mallory" is not allowed.
    assert.equal(await open.stores.users.recordLogin('dave', now, true), 'ok');
    assert.equal(await open.stores.users.setActive('dave', false), true);
    assert.equal(await closed.stores.users.recordLogin('alice', now, true), 'ok');
  });
  after(async () => {
    await Promise.all([open?.close(), closed?.close()]);
    await dovecot?.stop();
  });

  test('disabled, not allowed and control-character refusals: median within 0.7–1.4 of a wrong password', async () => {
    const times: Record<'wrong' | 'disabled' | 'wrongClosed' | 'notAllowed' | 'rejected', number[]> = {
      wrong: [],
      disabled: [],
      wrongClosed: [],
      notAllowed: [],
      rejected: [],
    };
    // The same wrong password each round counts once, so nothing here is throttled; the rounds run
    // one after another, each kind once per round at the same time, so load hits them alike.
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all([
        timedLogin(open.fastify, 'alice', 'wrong-password'),
        timedLogin(open.fastify, 'dave', 'dave-password'),
        timedLogin(closed.fastify, 'alice', 'wrong-password'),
        timedLogin(closed.fastify, 'mallory', 'some-password'),
        timedLogin(open.fastify, 'carol', 'bad\u0007password'),
      ]);
      for (const answer of answers) assert.equal(answer.status, 403);
      times.wrong.push(answers[0].ms);
      times.disabled.push(answers[1].ms);
      times.wrongClosed.push(answers[2].ms);
      times.notAllowed.push(answers[3].ms);
      times.rejected.push(answers[4].ms);
    }
    const ratios = {
      disabled: median(times.disabled) / median(times.wrong),
      notAllowed: median(times.notAllowed) / median(times.wrongClosed),
      rejected: median(times.rejected) / median(times.wrong),
    };
    for (const [kind, ratio] of Object.entries(ratios)) {
      assert.ok(
        ratio >= 0.7 && ratio <= 1.4,
        `${kind}: ratio ${ratio.toFixed(3)} (times ${JSON.stringify(times)})`,
      );
    }
    // The refusals really were decided without IMAP, as the classes they are.
    assert.deepEqual([...new Set(failures(open))].sort(), [
      'bad_credentials',
      'rejected_input',
      'user_disabled',
    ]);
    assert.deepEqual([...new Set(failures(closed))].sort(), ['bad_credentials', 'user_not_allowed']);
  });
});

describe('the wait comes from the authenticator, and nothing decided here reaches it', () => {
  test("a disabled user and a control character wait the authenticator's refusal delay", async () => {
    const fake = Object.assign(fakeAuthenticator({ alice: 'pw' }), { refusalDelayMs: () => 400 });
    const t = await startTestApp({ authenticator: fake });
    try {
      await t.stores.users.recordLogin('dave', Date.now(), true);
      await t.stores.users.setActive('dave', false);
      for (const [username, password] of [
        ['dave', 'pw'],
        ['alice', 'p\u0000w'],
      ] as const) {
        // The refusal waits 400 ms on a timer armed after this one of the same length, and timers of
        // one length run in order: this one has fired by the answer unless the wait was skipped.
        const reference = referenceTimer(400);
        const answer = await timedLogin(t.fastify, username, password);
        reference.cancel();
        assert.equal(answer.status, 403);
        assert.ok(reference.fired, `${username}: answered before the authenticator's refusal delay`);
      }
      assert.equal(fake.calls, 0, 'the authenticator was never asked');
    } finally {
      await t.close();
    }
  });
});
