// The store contract (Django's SessionTestsMixin pattern): one set of behavioural tests, run against
// every store combination of helpers/stores.ts — SQLite, PostgreSQL, PostgreSQL through PgBouncer,
// and Redis sessions over each — on real servers from the harness. A store that passes here can
// back the service.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { disableUser } from '../../src/auth/users.ts';
import { applyImport } from '../../src/groups/import.ts';
import { ImportConflictError, StoreUnavailableError } from '../../src/store/errors.ts';
import type { Group } from '../../src/store/group-types.ts';
import { GROUP_LIMITS, MAX_GROUP_ID, USERNAME_MAX_LENGTH } from '../../src/store/limits.ts';
import type { NewSession, PendingGuess, Stores } from '../../src/store/types.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';

const DAY = 86_400_000;
const WINDOW = 900_000;

const idOf = (label: string) => createHash('sha256').update(label).digest();

const group = (id: number, name: string, fields: Partial<Group> = {}): Group => ({
  id,
  name,
  description: '',
  short_description: '',
  activities: '',
  type: 0,
  ...fields,
});

describeEachStore('store contract', (store) => {
  let data: StoreData;
  let stores: Stores;
  // Real time: Redis keys carry TTLs on the server's clock.
  let now: number;
  before(async () => {
    data = await store.create();
    stores = await data.open();
  });
  after(async () => {
    await stores.close();
    await data.drop();
  });
  beforeEach(async () => {
    await data.reset(stores);
    now = Date.now();
  });

  /** Users must exist before their sessions in the SQL stores (foreign key). */
  async function user(username: string) {
    assert.equal(await stores.users.recordLogin(username, now, true), 'ok');
  }

  async function session(label: string, username: string, lifetimeMs = DAY) {
    await stores.sessions.create(
      {
        idHash: idOf(label),
        username,
        createdAt: now,
        expiresAt: now + lifetimeMs,
        clientIp: null,
        userAgent: null,
      },
      100,
    );
  }

  describe('sessions', () => {
    test('create, then get answers the user and the expiry; an unknown id answers null', async () => {
      await user('alice');
      await session('s1', 'alice');
      assert.deepEqual(await stores.sessions.get(idOf('s1'), now), {
        username: 'alice',
        expiresAt: now + DAY,
      });
      assert.equal(await stores.sessions.get(idOf('nope'), now), null);
    });

    test('expiry is absolute: alive until expires_at, gone from that instant on', async () => {
      await user('alice');
      await session('s1', 'alice', 60_000);
      const expiresAt = now + 60_000;
      assert.equal((await stores.sessions.get(idOf('s1'), expiresAt - 1))?.username, 'alice');
      assert.equal(await stores.sessions.get(idOf('s1'), expiresAt), null);
      assert.equal(await stores.sessions.get(idOf('s1'), expiresAt + DAY), null);
      assert.equal(await stores.sessions.countUser('alice', expiresAt - 1), 1);
      assert.equal(await stores.sessions.countUser('alice', expiresAt), 0);
    });

    test('delete answers true once, and the session is gone', async () => {
      await user('alice');
      await session('s1', 'alice');
      assert.equal(await stores.sessions.delete(idOf('s1')), true);
      assert.equal(await stores.sessions.delete(idOf('s1')), false);
      assert.equal(await stores.sessions.get(idOf('s1'), now), null);
      assert.equal(await stores.sessions.countUser('alice', now), 0);
      assert.equal(await stores.sessions.countActive(now), 0);
    });

    test('revokeUser deletes every session of that user at once, and nobody else’s', async () => {
      await user('alice');
      await user('bob');
      for (const label of ['a1', 'a2', 'a3']) await session(label, 'alice');
      await session('b1', 'bob');
      assert.equal(await stores.sessions.countUser('alice', now), 3);
      assert.equal(await stores.sessions.revokeUser('alice'), 3);
      assert.equal(await stores.sessions.revokeUser('alice'), 0);
      for (const label of ['a1', 'a2', 'a3']) assert.equal(await stores.sessions.get(idOf(label), now), null);
      assert.equal(await stores.sessions.countUser('alice', now), 0);
      assert.equal((await stores.sessions.get(idOf('b1'), now))?.username, 'bob');
      assert.equal(await stores.sessions.countActive(now), 1);
    });

    test('countUser and countActive count live sessions only', async () => {
      await user('alice');
      await user('bob');
      await session('a-short', 'alice', 1000);
      await session('a-long', 'alice');
      await session('b-long', 'bob');
      assert.equal(await stores.sessions.countUser('alice', now), 2);
      assert.equal(await stores.sessions.countUser('alice', now + 1000), 1);
      assert.equal(await stores.sessions.countUser('carol', now), 0);
      assert.equal(await stores.sessions.countActive(now), 3);
      assert.equal(await stores.sessions.countActive(now + 1000), 2);
    });

    test('purgeExpired deletes exactly the sessions expired at now', async () => {
      await user('alice');
      await user('bob');
      await session('a-short', 'alice', 1000);
      await session('b-short', 'bob', 2000);
      await session('a-long', 'alice');
      assert.equal(await stores.sessions.purgeExpired(now + 2000), 2);
      assert.equal(await stores.sessions.purgeExpired(now + 2000), 0);
      assert.equal(await stores.sessions.get(idOf('a-short'), now), null, 'purged sessions are gone');
      assert.equal((await stores.sessions.get(idOf('a-long'), now + 2000))?.username, 'alice');
      assert.equal(await stores.sessions.countActive(now), 1);
      assert.equal(await stores.sessions.countUser('alice', now), 1);
    });

    test('50 parallel logins and logouts leave exactly the expected sessions', async () => {
      const users = ['u0', 'u1', 'u2', 'u3', 'u4'];
      for (const name of users) await user(name);
      const first = Array.from({ length: 50 }, (_, i) => ({
        label: `first-${i}`,
        username: users[i % 5]!,
      }));
      await Promise.all(first.map((s) => session(s.label, s.username)));
      // Logouts of the even half race 50 new logins (not of u4) and a revoke of u4.
      const second = Array.from({ length: 50 }, (_, i) => ({
        label: `second-${i}`,
        username: users[i % 4]!,
      }));
      const loggedOut = first.filter((s, i) => i % 2 === 0 && s.username !== 'u4');
      const [deleted, , revoked] = await Promise.all([
        Promise.all(loggedOut.map((s) => stores.sessions.delete(idOf(s.label)))),
        Promise.all(second.map((s) => session(s.label, s.username))),
        stores.sessions.revokeUser('u4'),
      ]);
      assert.ok(deleted.every((result) => result === true));
      assert.equal(revoked, 10);
      const live = [...first.filter((s, i) => i % 2 === 1 && s.username !== 'u4'), ...second];
      for (const s of first.filter((s) => !live.includes(s))) {
        assert.equal(await stores.sessions.get(idOf(s.label), now), null, s.label);
      }
      for (const s of live)
        assert.equal((await stores.sessions.get(idOf(s.label), now))?.username, s.username);
      assert.equal(await stores.sessions.countActive(now), live.length);
      for (const name of users) {
        assert.equal(
          await stores.sessions.countUser(name, now),
          live.filter((s) => s.username === name).length,
          name,
        );
      }
      // The same id deleted 20 times at once is deleted exactly once.
      const racing = await Promise.all(
        Array.from({ length: 20 }, () => stores.sessions.delete(idOf('second-0'))),
      );
      assert.equal(racing.filter(Boolean).length, 1);
    });

    test('only the SHA-256 of a session id is stored, never the id', async () => {
      await user('alice');
      const id = 'abcdefghijklmnopqrstuvwxyz012345';
      const hash = createHash('sha256').update(id).digest();
      await stores.sessions.create(
        {
          idHash: hash,
          username: 'alice',
          createdAt: now,
          expiresAt: now + DAY,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
      const dump = await data.dump(stores);
      assert.ok(dump.includes(hash.toString('hex')), 'the hash is the key');
      assert.ok(!dump.includes(id), 'the raw id is nowhere');
    });
  });

  describe('my sessions (contract §9)', () => {
    const make = (label: string, username: string, at: number, client: Partial<NewSession> = {}) =>
      stores.sessions.create(
        {
          idHash: idOf(label),
          username,
          createdAt: at,
          expiresAt: at + DAY,
          clientIp: null,
          userAgent: null,
          ...client,
        },
        100,
      );

    test('list answers the user’s live sessions with where they started; nobody else’s, nothing expired', async () => {
      await user('alice');
      await user('bob');
      const ua = `Mozilla/5.0 ${'é'.repeat(200)} “quoted” 🙂`;
      // contract §12: how it signed in, and with which passkey, are kept too.
      await make('a1', 'alice', now, {
        clientIp: '192.0.2.10',
        userAgent: ua,
        method: 'passkey',
        passkey: 'ab'.repeat(16),
      });
      await make('a2', 'alice', now + 1, { clientIp: '2001:db8::1' });
      await make('b1', 'bob', now);
      await stores.sessions.create(
        {
          idHash: idOf('a-old'),
          username: 'alice',
          createdAt: now - DAY,
          expiresAt: now,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
      const listed = (await stores.sessions.list('alice', now)).sort((a, b) => a.createdAt - b.createdAt);
      assert.deepEqual(listed, [
        {
          idHash: idOf('a1'),
          createdAt: now,
          expiresAt: now + DAY,
          lastSeen: null,
          clientIp: '192.0.2.10',
          userAgent: ua,
          method: 'passkey',
          passkey: 'ab'.repeat(16),
        },
        {
          idHash: idOf('a2'),
          createdAt: now + 1,
          expiresAt: now + 1 + DAY,
          lastSeen: null,
          clientIp: '2001:db8::1',
          userAgent: null,
          method: null,
          passkey: null,
        },
      ]);
      assert.deepEqual(await stores.sessions.list('carol', now), []);
    });

    test('touch moves last_seen forward only, and never brings back a deleted session', async () => {
      await user('alice');
      await make('a1', 'alice', now);
      await make('a2', 'alice', now);
      await stores.sessions.touch([{ idHash: idOf('a1'), at: now + 5000 }]);
      await stores.sessions.touch([{ idHash: idOf('a1'), at: now + 1000 }]);
      await stores.sessions.delete(idOf('a2'));
      await stores.sessions.touch([
        { idHash: idOf('a2'), at: now + 7000 },
        { idHash: idOf('never'), at: now + 7000 },
      ]);
      await stores.sessions.touch([]);
      const listed = await stores.sessions.list('alice', now);
      assert.deepEqual(
        listed.map((s) => [s.idHash.toString('hex'), s.lastSeen]),
        [[idOf('a1').toString('hex'), now + 5000]],
      );
      assert.equal(await stores.sessions.get(idOf('a2'), now), null);
      assert.equal(await stores.sessions.get(idOf('never'), now), null);
      assert.equal(await stores.sessions.countActive(now), 1);
      const dump = await data.dump(stores);
      assert.ok(!dump.includes(idOf('a2').toString('hex')), 'nothing left of the deleted session');
    });

    test('the 101st session ends the oldest, in the same step; other users are untouched', async () => {
      await user('alice');
      await user('bob');
      await make('b1', 'bob', now);
      for (let i = 0; i < 100; i++) assert.equal(await make(`a${i}`, 'alice', now + i), 0);
      assert.equal(await make('a100', 'alice', now + 100), 1);
      assert.equal(await stores.sessions.get(idOf('a0'), now + 100), null, 'the oldest ended');
      assert.equal((await stores.sessions.get(idOf('a1'), now + 100))?.username, 'alice');
      assert.equal((await stores.sessions.get(idOf('a100'), now + 100))?.username, 'alice');
      assert.equal(await stores.sessions.countUser('alice', now + 100), 100);
      assert.equal((await stores.sessions.list('alice', now + 100)).length, 100);
      assert.equal(await stores.sessions.countUser('bob', now + 100), 1);
      assert.equal(await stores.sessions.countActive(now + 100), 101);
    });

    test('expired sessions do not count toward the cap', async () => {
      await user('alice');
      for (let i = 0; i < 100; i++)
        await stores.sessions.create(
          {
            idHash: idOf(`old${i}`),
            username: 'alice',
            createdAt: now - DAY,
            expiresAt: now,
            clientIp: null,
            userAgent: null,
          },
          100,
        );
      assert.equal(await make('new', 'alice', now), 0);
      assert.equal(await stores.sessions.countUser('alice', now), 1);
    });

    test('20 logins at once beyond the cap leave exactly 100, the newest', async () => {
      await user('alice');
      for (let i = 0; i < 95; i++) await make(`a${i}`, 'alice', now + i);
      const ended = await Promise.all(
        Array.from({ length: 20 }, (_, i) => make(`burst${i}`, 'alice', now + 1000 + i)),
      );
      assert.equal(
        ended.reduce((sum, n) => sum + n, 0),
        15,
      );
      assert.equal(await stores.sessions.countUser('alice', now + 2000), 100);
      for (let i = 0; i < 20; i++)
        assert.equal((await stores.sessions.get(idOf(`burst${i}`), now + 2000))?.username, 'alice');
      for (let i = 0; i < 15; i++) assert.equal(await stores.sessions.get(idOf(`a${i}`), now + 2000), null);
    });
  });

  describe('throttle counters', () => {
    test('distinct failures count one each, also 50 in parallel', async () => {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          stores.throttle.recordFailure(['u:alice', 'ip:192.0.2.1'], `fp-${i}`, now, WINDOW),
        ),
      );
      assert.equal((await stores.throttle.recentFailures('u:alice', 100, now, WINDOW)).length, 50);
      assert.equal((await stores.throttle.recentFailures('ip:192.0.2.1', 100, now, WINDOW)).length, 50);
      assert.equal((await stores.throttle.recentFailures('u:bob', 100, now, WINDOW)).length, 0);
    });

    test('the same fingerprint counts once, also 50 times in parallel, and keeps its latest time', async () => {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          stores.throttle.recordFailure(['u:alice'], 'same', now - i, WINDOW),
        ),
      );
      assert.equal((await stores.throttle.recentFailures('u:alice', 100, now, WINDOW)).length, 1);
      // An older time does not replace a newer one (max): it would have left the window earlier.
      await stores.throttle.recordFailure(['u:alice'], 'same', now - WINDOW / 2, WINDOW);
      assert.equal(
        (await stores.throttle.recentFailures('u:alice', 100, now + WINDOW - 1, WINDOW)).length,
        1,
      );
      assert.equal((await stores.throttle.recentFailures('u:alice', 100, now + WINDOW, WINDOW)).length, 0);
    });

    test('the window: a failure counts while younger than the window', async () => {
      await stores.throttle.recordFailure(['k'], 'a', now, WINDOW);
      assert.equal((await stores.throttle.recentFailures('k', 5, now + WINDOW - 1, WINDOW)).length, 1);
      assert.equal((await stores.throttle.recentFailures('k', 5, now + WINDOW, WINDOW)).length, 0);
    });

    test('recentFailures: the newest first, at most the limit, only inside the window', async () => {
      for (let i = 0; i < 5; i++)
        await stores.throttle.recordFailure(['k'], `fp-${i}`, now + i * 1000, WINDOW);
      const at = now + 4000;
      assert.deepEqual(await stores.throttle.recentFailures('k', 3, at, WINDOW), [
        now + 4000,
        now + 3000,
        now + 2000,
      ]);
      assert.deepEqual(
        await stores.throttle.recentFailures('k', 6, at, WINDOW),
        [4000, 3000, 2000, 1000, 0].map((ms) => now + ms),
      );
      assert.deepEqual(await stores.throttle.recentFailures('k', 6, now + WINDOW + 1000, WINDOW), [
        now + 4000,
        now + 3000,
        now + 2000,
      ]);
    });

    test('clear empties one key only', async () => {
      await stores.throttle.recordFailure(['u:alice', 'ip:192.0.2.1'], 'fp', now, WINDOW);
      await stores.throttle.clear('u:alice');
      assert.equal((await stores.throttle.recentFailures('u:alice', 5, now, WINDOW)).length, 0);
      assert.equal((await stores.throttle.recentFailures('ip:192.0.2.1', 5, now, WINDOW)).length, 1);
    });

    test('keys are opaque: NUL, % and IPv6 zones stay distinct', async () => {
      const keys = ['u:a\u0000b', 'u:a%00b', 'u:a%2500b', 'ip:fe80::1%eth0', 'u:ü'];
      for (const [i, key] of keys.entries()) {
        for (let n = 0; n <= i; n++) await stores.throttle.recordFailure([key], `fp-${n}`, now, WINDOW);
      }
      for (const [i, key] of keys.entries()) {
        assert.equal(
          (await stores.throttle.recentFailures(key, 10, now, WINDOW)).length,
          i + 1,
          JSON.stringify(key),
        );
      }
    });

    test('known clients are remembered until their expiry, per user and address', async () => {
      await stores.throttle.rememberClient('alice', '192.0.2.1', now, 60_000);
      assert.equal(await stores.throttle.isKnownClient('alice', '192.0.2.1', now + 59_999), true);
      assert.equal(await stores.throttle.isKnownClient('alice', '192.0.2.1', now + 60_000), false);
      assert.equal(await stores.throttle.isKnownClient('alice', '192.0.2.2', now), false);
      assert.equal(await stores.throttle.isKnownClient('bob', '192.0.2.1', now), false);
      // Remembering again moves the expiry.
      await stores.throttle.rememberClient('alice', '192.0.2.1', now + 30_000, 60_000);
      assert.equal(await stores.throttle.isKnownClient('alice', '192.0.2.1', now + 89_999), true);
    });

    test('purgeExpired keeps what still counts', async () => {
      await stores.throttle.recordFailure(['k'], 'old', now - WINDOW, WINDOW);
      await stores.throttle.recordFailure(['k'], 'new', now, WINDOW);
      await stores.throttle.rememberClient('alice', '192.0.2.1', now, 60_000);
      await stores.throttle.purgeExpired(now, WINDOW);
      assert.equal((await stores.throttle.recentFailures('k', 5, now, WINDOW)).length, 1);
      assert.equal(await stores.throttle.isKnownClient('alice', '192.0.2.1', now), true);
    });

    test('a password is never stored, only the fingerprint it is given', async () => {
      await stores.throttle.recordFailure(['u:alice'], 'fingerprint-of-guess', now, WINDOW);
      const dump = await data.dump(stores);
      assert.ok(dump.includes('fingerprint-of-guess'));
      assert.ok(dump.includes('u:alice'));
    });
  });

  describe('guesses in flight', () => {
    const guess = (fingerprint: string, key = 'u:alice', ttlMs = 60_000): PendingGuess => ({
      key,
      fingerprint,
      id: randomUUID(),
      expiresAt: now + ttlMs,
    });
    const begin = (g: PendingGuess, limit: number | null = 5, at = now) =>
      stores.throttle.beginGuess(g, limit, at, WINDOW);
    const ADMITTED = { admitted: true };

    test('distinct guesses are admitted up to the limit; the next is refused with the facts', async () => {
      for (let i = 0; i < 5; i++) assert.deepEqual(await begin(guess(`fp-${i}`)), ADMITTED);
      assert.deepEqual(await begin(guess('fp-5')), { admitted: false, failures: [], pending: 5 });
      assert.deepEqual(await begin(guess('fp-5', 'u:bob')), ADMITTED, 'another key is not affected');
    });

    test('identical guesses count once, and each attempt ends on its own', async () => {
      const same = Array.from({ length: 10 }, () => guess('same'));
      for (const g of same) assert.deepEqual(await begin(g), ADMITTED);
      for (let i = 0; i < 4; i++) assert.deepEqual(await begin(guess(`fp-${i}`)), ADMITTED);
      assert.deepEqual(await begin(guess('fp-4')), { admitted: false, failures: [], pending: 5 });
      const again = guess('same');
      assert.deepEqual(
        await begin(again),
        ADMITTED,
        'a guess already in flight does not count against itself',
      );
      // All but one of the identical attempts end: the fingerprint is still in flight.
      for (const g of [...same, again].slice(1)) await stores.throttle.endGuess(g);
      assert.equal((await begin(guess('fp-4'))).admitted, false);
      await stores.throttle.endGuess(same[0]!);
      assert.deepEqual(await begin(guess('fp-4')), ADMITTED);
    });

    test('failures and guesses in flight count together, a fingerprint in both once; failures newest first', async () => {
      for (const [i, age] of [3000, 2000, 1000].entries())
        await stores.throttle.recordFailure(['u:alice'], `fp-${i}`, now - age, WINDOW);
      await stores.throttle.recordFailure(['u:alice'], 'fp-old', now - WINDOW, WINDOW);
      assert.deepEqual(
        await begin(guess('fp-2')),
        ADMITTED,
        'a repeated failed guess: 3 failures, none other',
      );
      assert.deepEqual(await begin(guess('fp-3')), ADMITTED, 'fp-2 in flight is already a failure: 3');
      assert.deepEqual(await begin(guess('fp-4')), ADMITTED, '3 failures and fp-3: 4');
      assert.deepEqual(await begin(guess('fp-5')), {
        admitted: false,
        failures: [now - 1000, now - 2000, now - 3000],
        pending: 2,
      });
      // At most `limit` failure times come back.
      assert.deepEqual(await begin(guess('fp-5'), 2), {
        admitted: false,
        failures: [now - 1000, now - 2000],
        pending: 2,
      });
    });

    test('50 guesses in parallel through two handles on the same store: exactly the limit is admitted', async () => {
      const other = await data.open();
      try {
        const answers = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            (i % 2 === 0 ? stores : other).throttle.beginGuess(guess(`fp-${i}`), 5, now, WINDOW),
          ),
        );
        assert.equal(answers.filter((a) => a.admitted).length, 5);
        for (const a of answers)
          if (!a.admitted) assert.deepEqual(a, { admitted: false, failures: [], pending: 5 });
      } finally {
        await other.close();
      }
    });

    test('an ended guess no longer counts, nor an expired one (its process crashed)', async () => {
      const short = guess('fp-0', 'u:alice', 1000);
      const ended = guess('fp-1');
      for (const g of [short, ended, guess('fp-2'), guess('fp-3'), guess('fp-4')])
        assert.deepEqual(await begin(g), ADMITTED);
      assert.equal((await begin(guess('fp-5'))).admitted, false);
      await stores.throttle.endGuess(ended);
      assert.deepEqual(await begin(guess('fp-5')), ADMITTED);
      assert.deepEqual(await begin(guess('fp-6'), 5, now + 999), {
        admitted: false,
        failures: [],
        pending: 5,
      });
      assert.deepEqual(await begin(guess('fp-6'), 5, now + 1000), ADMITTED, 'fp-0 expired at +1000');
    });

    test('no limit (a known client) admits the guess and counts it for the others', async () => {
      for (let i = 0; i < 5; i++) await begin(guess(`fp-${i}`));
      assert.deepEqual(await begin(guess('owner'), null), ADMITTED);
      assert.deepEqual(await begin(guess('fp-9'), 10), ADMITTED);
      assert.deepEqual(await begin(guess('fp-10'), 7), { admitted: false, failures: [], pending: 7 });
    });

    test('keys are opaque for guesses too: NUL and % stay distinct', async () => {
      for (let i = 0; i < 5; i++) assert.deepEqual(await begin(guess(`fp-${i}`, 'u:a\u0000b')), ADMITTED);
      assert.equal((await begin(guess('fp-5', 'u:a\u0000b'))).admitted, false);
      assert.deepEqual(await begin(guess('fp-5', 'u:a%00b')), ADMITTED);
    });

    test('an expired guess leaves nothing behind once purged or its key is used again', async () => {
      await begin(guess('fingerprint-expired', 'u:alice', 1000));
      await begin(guess('fingerprint-live', 'u:alice', 60_000));
      await stores.throttle.purgeExpired(now + 1000, WINDOW);
      await begin(guess('fp-next'), 5, now + 1000);
      const dump = await data.dump(stores);
      assert.ok(!dump.includes('fingerprint-expired'));
      assert.ok(dump.includes('fingerprint-live'));
    });
  });

  describe('sign-ins in progress (contract §10)', () => {
    const flow = (label: string, lifetimeMs = 600_000, data = Buffer.from(`sealed ${label}`)) => ({
      idHash: idOf(label),
      data,
      createdAt: now,
      expiresAt: now + lifetimeMs,
    });

    test('take answers the data once, then null: the flow is gone', async () => {
      await stores.flows.put(flow('f1'));
      assert.deepEqual(await stores.flows.take(idOf('f1'), now), Buffer.from('sealed f1'));
      assert.equal(await stores.flows.take(idOf('f1'), now), null);
      assert.equal(await stores.flows.take(idOf('never'), now), null);
    });

    test('bytes come back exactly, every value of a byte included', async () => {
      const bytes = Buffer.from(Array.from({ length: 512 }, (_, i) => i % 256));
      await stores.flows.put(flow('bytes', 600_000, bytes));
      assert.deepEqual(await stores.flows.take(idOf('bytes'), now), bytes);
    });

    test('an expired flow is never answered, and a take of it leaves nothing to take later', async () => {
      await stores.flows.put(flow('short', 1000));
      assert.equal(await stores.flows.take(idOf('short'), now + 1000), null);
      assert.equal(await stores.flows.take(idOf('short'), now), null);
    });

    test('of many takes at once of one flow, exactly one gets it', async () => {
      await stores.flows.put(flow('raced'));
      const takes = await Promise.all(Array.from({ length: 8 }, () => stores.flows.take(idOf('raced'), now)));
      assert.equal(takes.filter((taken) => taken !== null).length, 1);
    });

    test('flows are apart: taking one leaves the others', async () => {
      await stores.flows.put(flow('a'));
      await stores.flows.put(flow('b'));
      assert.deepEqual(await stores.flows.take(idOf('a'), now), Buffer.from('sealed a'));
      assert.deepEqual(await stores.flows.take(idOf('b'), now), Buffer.from('sealed b'));
    });

    test('purgeExpired drops expired flows and keeps live ones', async () => {
      await stores.flows.put(flow('old', 1000));
      await stores.flows.put(flow('live'));
      await stores.flows.purgeExpired(now + 1000);
      const dump = await data.dump(stores);
      // Redis reclaims an expired flow by its TTL, on its own clock: only the SQL stores purge rows.
      if (!store.kind.startsWith('redis'))
        assert.ok(!dump.includes(idOf('old').toString('hex')), 'the expired flow is gone');
      assert.ok(dump.includes(idOf('live').toString('hex')), 'the live flow is kept');
      assert.equal(await stores.flows.take(idOf('old'), now + 1000), null);
      assert.deepEqual(await stores.flows.take(idOf('live'), now + 1000), Buffer.from('sealed live'));
    });
  });

  describe('users, groups and the secret key', () => {
    test('recordLogin: created when allowed, unknown when not, refused when disabled', async () => {
      assert.equal(await stores.users.recordLogin('newbie', now, false), 'unknown');
      assert.equal(await stores.users.get('newbie'), null);
      assert.equal(await stores.users.recordLogin('newbie', now, true), 'ok');
      assert.deepEqual(await stores.users.get('newbie'), {
        username: 'newbie',
        active: true,
        createdAt: now,
        lastLoginAt: now,
        passwordSignIn: true,
      });
      assert.equal(await stores.users.recordLogin('newbie', now + 5, false), 'ok');
      assert.equal((await stores.users.get('newbie'))?.lastLoginAt, now + 5);
      assert.equal(await stores.users.setActive('newbie', false), true);
      assert.equal(await stores.users.recordLogin('newbie', now + 9, true), 'disabled');
      assert.equal(
        (await stores.users.get('newbie'))?.lastLoginAt,
        now + 5,
        'a refused login is not recorded',
      );
      assert.equal(await stores.users.setActive('ghost', false), false);
    });

    test('users are listed in code-point order', async () => {
      for (const name of ['émile', 'alice', 'Zed', '_x', 'bob']) await user(name);
      assert.deepEqual(
        (await stores.users.list()).map((u) => u.username),
        ['Zed', '_x', 'alice', 'bob', 'émile'],
      );
    });

    test('disableUser revokes the sessions wherever they live', async () => {
      await user('alice');
      await session('a1', 'alice');
      await session('a2', 'alice');
      assert.deepEqual(await disableUser(stores, 'alice'), { revoked: 2 });
      assert.equal(await stores.sessions.countUser('alice', now), 0);
      assert.equal((await stores.users.get('alice'))?.active, false);
    });

    test('listForMember and detail: members and administrators, by id; member_status of anyone', async () => {
      for (const g of [group(9, 'Nine'), group(2, 'Two'), group(5, 'Five', { type: 1 }), group(7, 'Seven')]) {
        await stores.groups.upsertGroup(g);
      }
      await stores.groups.setMembership({ group: 9, username: 'alice', status: 2 });
      await stores.groups.setMembership({ group: 2, username: 'alice', status: 1 });
      await stores.groups.setMembership({ group: 5, username: 'alice', status: 0 });
      assert.deepEqual(
        (await stores.groups.listForMember('alice')).map((g) => g.id),
        [2, 9],
      );
      assert.deepEqual(await stores.groups.detail(5, 'alice'), {
        ...group(5, 'Five', { type: 1 }),
        member_status: 0,
      });
      assert.deepEqual(await stores.groups.detail(7, 'alice'), { ...group(7, 'Seven'), member_status: -1 });
      assert.equal(await stores.groups.detail(8, 'alice'), null);
      assert.equal(await stores.groups.removeMembership(9, 'alice'), true);
      assert.equal(await stores.groups.removeMembership(9, 'alice'), false);
      assert.equal(await stores.groups.removeGroup(2), true);
      assert.deepEqual(await stores.groups.listForMember('alice'), [], 'memberships go with their group');
    });

    test('conflicts are reported as such; limits are enforced by the database too', async () => {
      await stores.groups.upsertGroup(group(1, 'Chess'));
      await assert.rejects(stores.groups.upsertGroup(group(2, 'Chess')), (err: unknown) => {
        assert.ok(err instanceof ImportConflictError);
        assert.deepEqual(err.problems, [
          { path: 'name', reason: '"Chess" is already the name of another group' },
        ]);
        return true;
      });
      await assert.rejects(
        stores.groups.setMembership({ group: 3, username: 'alice', status: 1 }),
        (err: unknown) => err instanceof ImportConflictError && err.problems[0]?.path === 'group',
      );
      assert.equal(await stores.users.get('alice'), null, 'a refused membership creates no user');
      // Past the validation, the database refuses too, and that is not an outage.
      for (const bad of [group(3, 'x'.repeat(201)), group(4, ''), group(5, 'ok', { type: 2 as 0 })]) {
        await assert.rejects(
          stores.groups.upsertGroup(bad),
          (err: unknown) => !(err instanceof StoreUnavailableError) && !(err instanceof ImportConflictError),
        );
      }
      assert.deepEqual(
        (await stores.groups.list()).map((g) => g.id),
        [1],
      );
    });

    test('addGroup inserts and never overwrites: a free id (contract §11), or a conflict naming the id or the name', async () => {
      const conflictOf = (path: string, reason: string) => (err: unknown) => {
        assert.ok(err instanceof ImportConflictError, String(err));
        assert.deepEqual(err.problems, [{ path, reason }]);
        return true;
      };
      const { id: _, ...fields } = group(0, 'Chess');
      assert.deepEqual(await stores.groups.addGroup({ ...fields, id: null }), group(1, 'Chess'));
      assert.deepEqual(await stores.groups.addGroup({ ...group(7, 'Seven') }), group(7, 'Seven'));
      // Added at once, each gets its own id: none is lost and none overwritten.
      const added = await Promise.all(
        ['A', 'B', 'C', 'D'].map((name) => stores.groups.addGroup({ ...fields, name, id: null })),
      );
      assert.deepEqual(
        added.map((g) => g.id).sort((a, b) => a - b),
        [8, 9, 10, 11],
      );
      await assert.rejects(
        stores.groups.addGroup(group(7, 'Other')),
        conflictOf('id', 'group 7 exists already (use group update)'),
      );
      await assert.rejects(
        stores.groups.addGroup({ ...fields, name: 'Seven', id: null }),
        conflictOf('name', '"Seven" is already the name of another group'),
      );
      await stores.groups.addGroup(group(MAX_GROUP_ID, 'Last'));
      // contract §11: with the top of the range taken, the lowest unused id anywhere.
      const beyond = await stores.groups.addGroup({ ...fields, name: 'Beyond', id: null });
      assert.equal(beyond.id, 2);
      assert.equal((await stores.groups.addGroup({ ...fields, name: 'Next', id: null })).id, 3);
      assert.deepEqual(
        (await stores.groups.list()).map((g) => [g.id, g.name]),
        [
          [1, 'Chess'],
          [2, 'Beyond'],
          [3, 'Next'],
          [7, 'Seven'],
          ...added.map((g) => [g.id, g.name]).sort((a, b) => Number(a[0]) - Number(b[0])),
          [MAX_GROUP_ID, 'Last'],
        ],
      );
    });

    test('the database enforces exactly the data limits of limits.ts, in code points', async () => {
      // '😀' is two UTF-16 units and four UTF-8 bytes: a limit counted in either would differ.
      const text = (n: number) => '😀'.repeat(n);
      const refused = (err: unknown) =>
        !(err instanceof StoreUnavailableError) && !(err instanceof ImportConflictError);
      const limits = Object.entries(GROUP_LIMITS) as [keyof typeof GROUP_LIMITS, number][];
      for (const [field, limit] of limits) {
        await stores.groups.upsertGroup(group(1, 'g', { [field]: text(limit) }));
        await assert.rejects(
          stores.groups.upsertGroup(group(2, 'h', { [field]: text(limit + 1) })),
          refused,
          field,
        );
      }
      await stores.groups.upsertGroup(group(MAX_GROUP_ID, 'last'));
      for (const id of [0, MAX_GROUP_ID + 1]) {
        await assert.rejects(stores.groups.upsertGroup(group(id, `id ${id}`)), refused, `id ${id}`);
      }
      assert.equal(await stores.users.recordLogin(text(USERNAME_MAX_LENGTH), now, true), 'ok');
      await assert.rejects(stores.users.recordLogin(text(USERNAME_MAX_LENGTH + 1), now, true), refused);
      assert.deepEqual(
        (await stores.groups.list()).map((g) => g.id),
        [1, MAX_GROUP_ID],
      );
    });

    test('the secret key is 32 bytes and the same across opens of the same database', async () => {
      const key = await stores.secretKey();
      assert.equal(key.length, 32);
      const again = await data.open();
      try {
        assert.deepEqual(await again.secretKey(), key);
      } finally {
        await again.close();
      }
      assert.deepEqual(await stores.secretKey(), key);
    });

    test('ping answers while the stores are up', async () => {
      await stores.ping();
    });
  });

  describe('import and export', () => {
    const FILE = {
      groups: [
        {
          id: 1,
          name: 'Chess Club',
          description: 'Games.',
          short_description: 'Moves.',
          activities: 'Tue.',
          type: 0,
        },
        {
          id: 2,
          name: 'Biology 2B',
          description: 'Cells.',
          short_description: '',
          activities: '',
          type: 1,
        },
      ],
      users: [
        { username: 'dave', active: false },
        { username: 'erin', active: true },
      ],
      memberships: [
        { group: 2, username: 'alice', status: 2 },
        { group: 1, username: 'alice', status: 1 },
        { group: 1, username: 'dave', status: 0 },
      ],
    };

    test('a user entry without active leaves the flag as it is; a new one is created active (§4)', async () => {
      assert.equal((await applyImport(stores, FILE, 'lower')).ok, true);
      const outcome = await applyImport(
        stores,
        { users: [{ username: 'dave' }, { username: 'finn' }] },
        'lower',
      );
      assert.deepEqual(outcome, { ok: true, counts: { groups: 0, users: 2, memberships: 0 } });
      assert.equal((await stores.users.get('dave'))?.active, false, 'an import never re-enables unasked');
      assert.equal((await stores.users.get('finn'))?.active, true);
      assert.equal(
        (await applyImport(stores, { users: [{ username: 'dave', active: true }] }, 'lower')).ok,
        true,
      );
      assert.equal((await stores.users.get('dave'))?.active, true, '"active": true does re-enable');
    });

    test('a round trip: import, export, import the export elsewhere, export again', async () => {
      assert.deepEqual(await applyImport(stores, FILE, 'lower'), {
        ok: true,
        counts: { groups: 2, users: 2, memberships: 3 },
      });
      const exported = await stores.groups.exportData();
      assert.deepEqual(exported, {
        groups: FILE.groups,
        users: [
          { username: 'alice', active: true },
          { username: 'dave', active: false },
          { username: 'erin', active: true },
        ],
        memberships: [
          { group: 1, username: 'alice', status: 1 },
          { group: 1, username: 'dave', status: 0 },
          { group: 2, username: 'alice', status: 2 },
        ],
      });
      assert.deepEqual(await applyImport(stores, FILE, 'lower'), {
        ok: true,
        counts: { groups: 2, users: 2, memberships: 3 },
      });
      assert.deepEqual(await stores.groups.exportData(), exported, 'idempotent');
      await data.reset(stores);
      assert.equal((await applyImport(stores, exported, 'lower')).ok, true);
      assert.deepEqual(await stores.groups.exportData(), exported);
    });

    test('a file that swaps two names is applied', async () => {
      await applyImport(stores, FILE, 'lower');
      const swapped = {
        groups: [
          { ...FILE.groups[0]!, name: 'Biology 2B' },
          { ...FILE.groups[1]!, name: 'Chess Club' },
        ],
      };
      assert.equal((await applyImport(stores, swapped, 'lower')).ok, true);
      assert.deepEqual(
        (await stores.groups.list()).map((g) => [g.id, g.name]),
        [
          [1, 'Biology 2B'],
          [2, 'Chess Club'],
        ],
      );
    });

    test('conflicts are named by path, and nothing changes', async () => {
      await applyImport(stores, FILE, 'lower');
      await stores.groups.upsertGroup(group(3, 'Taken'));
      const before = await stores.groups.exportData();
      const outcome = await applyImport(
        stores,
        {
          groups: [
            { id: 1, name: 'Renamed' },
            { id: 4, name: 'Taken' },
            { id: 2, name: 'Chess Club' },
          ],
          users: [{ username: 'frank', active: false }],
          memberships: [
            { group: 1, username: 'zoe', status: 1 },
            { group: 99, username: 'zoe', status: 1 },
            { group: 4, username: 'zoe', status: 1 },
          ],
        },
        'lower',
      );
      assert.deepEqual(outcome, {
        ok: false,
        problems: [
          { path: 'groups[1].name', reason: '"Taken" is already the name of another group' },
          { path: 'memberships[1].group', reason: 'no group with id 99' },
          { path: 'memberships[2].group', reason: 'no group with id 4' },
        ],
      });
      assert.deepEqual(await stores.groups.exportData(), before);
    });

    test('a user disabled by an import loses every session, wherever sessions live', async () => {
      await user('dave');
      await user('erin');
      await session('d1', 'dave');
      await session('d2', 'dave');
      await session('e1', 'erin');
      assert.equal((await applyImport(stores, FILE, 'lower')).ok, true);
      assert.equal(await stores.sessions.countUser('dave', now), 0);
      assert.equal(await stores.sessions.get(idOf('d1'), now), null);
      assert.equal((await stores.sessions.get(idOf('e1'), now))?.username, 'erin');
    });

    test('a refused import revokes nothing', async () => {
      await user('dave');
      await session('d1', 'dave');
      const outcome = await applyImport(
        stores,
        {
          users: [{ username: 'dave', active: false }],
          memberships: [{ group: 5, username: 'dave', status: 1 }],
        },
        'lower',
      );
      assert.equal(outcome.ok, false);
      assert.equal((await stores.sessions.get(idOf('d1'), now))?.username, 'dave');
      assert.equal((await stores.users.get('dave'))?.active, true);
    });
  });
});
