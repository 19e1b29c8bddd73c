// Contract §3: a refusal decided without the authentication backend (a disabled user, a user not
// allowed, input refused before IMAP) takes as long as a refused password at the backend would: it
// waits one of the durations the backend's recent refusals took (RefusalTiming). Proved without
// reading a clock (a loaded machine makes measured times flaky): against the harness Dovecot, the
// IMAP authenticator's clock moves only inside a login, by a duration this test picks, so the
// duration of every refused password is known exactly; the wait of every refusal decided here is
// recorded as asked, then really waited. Each wait must be one of the durations recorded before it
// (the seed before any).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { VerifyResult } from '../../src/backends/authenticator.ts';
import { IMAP_REFUSAL_SEED_MS } from '../../src/backends/imap/backend.ts';
import { verifyImapLogin } from '../../src/backends/imap/client.ts';
import { RefusalTiming } from '../../src/backends/refusal-timing.ts';
import { fakeAuthenticator, startTestApp, type TestApp } from '../helpers/app.ts';
import { type Dovecot, startDovecot } from '../helpers/dovecot.ts';

const ROUNDS = 5;

/** The status of one login. */
async function attempt(fastify: FastifyInstance, username: string, password: string): Promise<number> {
  const response = await fastify.inject({
    method: 'POST',
    url: '/api/auth/login',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ username, password }),
  });
  return response.statusCode;
}

function failures(t: TestApp): string[] {
  return t.logs
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.audit === 'login')
    .map((entry) => String(entry.failure));
}

/** RefusalTiming as the guard feeds it, with every duration it was given kept in order. */
class RecordedTiming extends RefusalTiming {
  readonly recorded: number[] = [];
  override record(ms: number): void {
    this.recorded.push(ms);
    super.record(ms);
  }
}

/** One wait of a refusal decided without IMAP: as asked, and what it could have been drawn from. */
interface Wait {
  readonly ms: number;
  /** The refused passwords' durations recorded when it was drawn. */
  readonly recordedBefore: readonly number[];
  over: boolean;
}

/** How long each IMAP login lasts on the authenticators' clocks: distinct, and none is the seed. */
let nextDuration = 401;
const takeDuration = () => {
  nextDuration += 17;
  return nextDuration;
};

/** An app on the real IMAP authenticator with a test clock, and its refusals' waits recorded. */
async function instrumentedApp(dovecot: Dovecot, env: Record<string, string> = {}) {
  const clock = { ms: 0 };
  const timing = new RecordedTiming(IMAP_REFUSAL_SEED_MS);
  const logins: { username: string; result: VerifyResult; ms: number }[] = [];
  const waits: Wait[] = [];
  const app = await startTestApp({
    dovecot,
    env,
    imap: {
      timing,
      now: () => clock.ms,
      // The real login against Dovecot; on the authenticator's clock it lasts the next duration.
      login: async (settings, tls, username, password, clientIp) => {
        const result = await verifyImapLogin(settings, tls, username, password, clientIp);
        const ms = takeDuration();
        clock.ms += ms;
        logins.push({ username, result, ms });
        return result;
      },
    },
    // The login procedure's clock stands still, so the delay it asks is the whole wait it decided on.
    loginNow: () => 0,
    // Records the delay asked, then waits it for real: an answer sent before it is over is seen.
    sleep: async (ms) => {
      const wait: Wait = { ms, recordedBefore: [...timing.recorded], over: false };
      waits.push(wait);
      await sleep(ms);
      wait.over = true;
    },
  });
  /**
   * A login refused without IMAP, and the one wait it asked for. Refusals of one app run one at a
   * time (wrong passwords alongside never wait), so the wait recorded meanwhile is this one's.
   */
  const refuse = async (username: string, password: string): Promise<Wait> => {
    const first = waits.length;
    assert.equal(await attempt(app.fastify, username, password), 403);
    const mine = waits.slice(first);
    assert.equal(mine.length, 1, `${username}: one wait per refusal`);
    assert.ok(mine[0]!.over, `${username}: answered before its wait was over`);
    return mine[0]!;
  };
  const wrongPassword = async () => assert.equal(await attempt(app.fastify, 'alice', 'wrong-password'), 403);
  return { app, timing, logins, waits, refuse, wrongPassword };
}

type Instrumented = Awaited<ReturnType<typeof instrumentedApp>>;

describe("refusals decided without IMAP wait as long as one of Dovecot's recent refusals of a wrong password", () => {
  let dovecot: Dovecot;
  let open: Instrumented;
  let closed: Instrumented;
  before(async () => {
    dovecot = await startDovecot({ authFailureDelay: 2 });
    [open, closed] = await Promise.all([
      instrumentedApp(dovecot),
      instrumentedApp(dovecot, { ALLOW_NEW_USERS: 'false' }),
    ]);
    const now = Date.now();
    // dave is disabled; with ALLOW_NEW_USERS=false only alice exists, so "mallory" is not allowed.
    assert.equal(await open.app.stores.users.recordLogin('dave', now, true), 'ok');
    assert.equal(await open.app.stores.users.setActive('dave', false), true);
    assert.equal(await closed.app.stores.users.recordLogin('alice', now, true), 'ok');
  });
  after(async () => {
    await Promise.all([open?.app.close(), closed?.app.close()]);
    await dovecot?.stop();
  });

  test('disabled, not allowed and control-character refusals each wait a recorded refusal, or the seed before one', async () => {
    const kinds = {
      disabled: () => open.refuse('dave', 'dave-password'),
      rejected: () => open.refuse('carol', 'bad\u0007password'),
      notAllowed: () => closed.refuse('mallory', 'some-password'),
    };
    const waits: Record<keyof typeof kinds, Wait[]> = { disabled: [], rejected: [], notAllowed: [] };
    const refuseAll = async () => {
      // One app's refusals one after another, so each wait is told apart (see refuse()).
      const [disabled, notAllowed] = await Promise.all([kinds.disabled(), kinds.notAllowed()]);
      const rejected = await kinds.rejected();
      waits.disabled.push(disabled);
      waits.notAllowed.push(notAllowed);
      waits.rejected.push(rejected);
    };

    // Before any wrong password: nothing is recorded, every refusal waits the seed.
    await refuseAll();
    for (const [kind, [first]] of Object.entries(waits)) {
      assert.deepEqual(first, { ms: IMAP_REFUSAL_SEED_MS, recordedBefore: [], over: true }, kind);
    }
    // Then wrong passwords alongside the refusals. The same wrong password each round counts once,
    // so nothing here is throttled.
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all([open.wrongPassword(), closed.wrongPassword(), refuseAll()]);
    }

    // Only alice's wrong passwords reached IMAP, and the guard recorded each as long as it lasted.
    for (const { logins, timing } of [open, closed]) {
      assert.deepEqual(
        logins.map(({ username, result }) => [username, result.ok || result.failure]),
        Array.from({ length: ROUNDS }, () => ['alice', 'bad_credentials']),
      );
      assert.deepEqual(
        timing.recorded,
        logins.map(({ ms }) => ms),
      );
    }
    // contract §3: every wait is a duration recorded before it (its own app's), the seed before any.
    for (const [kind, all] of Object.entries(waits)) {
      assert.equal(all.length, ROUNDS + 1, kind);
      for (const { ms, recordedBefore } of all) {
        const drawnFrom = recordedBefore.length === 0 ? [IMAP_REFUSAL_SEED_MS] : recordedBefore;
        assert.ok(drawnFrom.includes(ms), `${kind}: waited ${ms} ms, not one of ${drawnFrom.join(', ')}`);
      }
    }
    // Each round after the first starts once a wrong password was recorded: most waits were drawn.
    for (const [kind, all] of Object.entries(waits)) {
      assert.ok(
        all.slice(2).every((wait) => wait.recordedBefore.length > 0),
        kind,
      );
    }
    // The refusals really were decided without IMAP, as the classes they are.
    assert.deepEqual([...new Set(failures(open.app))].sort(), [
      'bad_credentials',
      'rejected_input',
      'user_disabled',
    ]);
    assert.deepEqual([...new Set(failures(closed.app))].sort(), ['bad_credentials', 'user_not_allowed']);
  });
});

describe('the wait comes from the authenticator, and nothing decided here reaches it', () => {
  test("a disabled user and a control character wait the authenticator's refusal delay", async () => {
    const fake = Object.assign(fakeAuthenticator({ alice: 'pw' }), { refusalDelayMs: () => 400 });
    // The login procedure's clock moves only by the waits it asks for, each recorded: a wait cut
    // short or skipped shows as such, however loaded the machine (timers armed from a clock read
    // in a long turn of the event loop may fire a little early).
    const clock = { ms: 0 };
    const waits: number[] = [];
    const t = await startTestApp({
      authenticator: fake,
      loginNow: () => clock.ms,
      sleep: async (ms) => {
        waits.push(ms);
        clock.ms += ms;
      },
    });
    try {
      await t.stores.users.recordLogin('dave', Date.now(), true);
      await t.stores.users.setActive('dave', false);
      for (const [username, password] of [
        ['dave', 'pw'],
        ['alice', 'p\u0000w'],
      ] as const) {
        const asked = waits.length;
        const status = await attempt(t.fastify, username, password);
        assert.equal(status, 403);
        assert.deepEqual(waits.slice(asked), [400], `${username}: waited the authenticator's refusal delay`);
      }
      assert.equal(fake.calls, 0, 'the authenticator was never asked');
    } finally {
      await t.close();
    }
  });
});
