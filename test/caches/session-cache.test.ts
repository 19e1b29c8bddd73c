// Sessions are answered from each process's memory on SQLite, yet a logout, revoke or disable in
// another process takes effect on the very next request (contract §2). Two apps on one database file
// have two SQLite connections, as two processes (or the admin CLI) would.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { openSqliteDatabase } from '../../src/store/sqlite/driver.ts';
import { migrateSqlite } from '../../src/store/sqlite/schema.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { aliceSession, lockedOnce, sessionsWithMemory } from '../helpers/sqlite-sessions.ts';

describe('the session cache across processes', () => {
  let a: TestApp;
  let b: TestApp;
  before(async () => {
    a = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw', bob: 'pw' }) });
    b = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { DATABASE_URL: a.config.databaseUrl },
    });
  });
  after(async () => {
    await b.close();
    await a.close();
  });

  const check = (t: TestApp, cookie: string) =>
    t.fastify.inject({ url: '/api/auth/check', headers: { cookie } });
  const cli = (...argv: string[]) =>
    runCli(argv, { DATABASE_URL: a.config.databaseUrl }, { out: () => undefined, err: () => undefined });

  test('a logout on A is seen by B on its very next request, though B had the session cached', async () => {
    const { cookie } = await loginAs(a.fastify, 'alice', 'pw');
    for (let i = 0; i < 3; i++) assert.equal((await check(b, cookie)).body, '"alice"');
    await a.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    assert.equal((await check(b, cookie)).statusCode, 403);
    assert.equal((await check(a, cookie)).statusCode, 403);
  });

  test('a rotation on A (login with the old cookie) kills the old id on B at once', async () => {
    const first = await loginAs(a.fastify, 'alice', 'pw');
    assert.equal((await check(b, first.cookie)).statusCode, 200);
    const second = await loginAs(a.fastify, 'alice', 'pw', { cookie: first.cookie });
    assert.equal((await check(b, first.cookie)).statusCode, 403);
    assert.equal((await check(b, second.cookie)).statusCode, 200);
  });

  test('sessions revoke and user disable from the CLI end cached sessions in both apps', async () => {
    const alice = await loginAs(a.fastify, 'alice', 'pw');
    const bob = await loginAs(a.fastify, 'bob', 'pw');
    for (const t of [a, b]) {
      assert.equal((await check(t, alice.cookie)).statusCode, 200);
      assert.equal((await check(t, bob.cookie)).statusCode, 200);
    }
    assert.equal(await cli('sessions', 'revoke', 'alice'), 0);
    assert.equal(await cli('user', 'disable', 'bob'), 0);
    for (const t of [a, b]) {
      assert.equal((await check(t, alice.cookie)).statusCode, 403, 'revoked');
      assert.equal((await check(t, bob.cookie)).statusCode, 403, 'disabled');
    }
    assert.equal(await cli('user', 'enable', 'bob'), 0);
  });

  test('contract §9: a session ended by its handle on A is refused by B on its very next request', async () => {
    const laptop = await loginAs(a.fastify, 'alice', 'pw');
    const phone = await loginAs(a.fastify, 'alice', 'pw');
    for (const t of [a, b]) assert.equal((await check(t, phone.cookie)).statusCode, 200, 'cached');
    const listed = await b.fastify.inject({ url: '/api/auth/sessions', headers: { cookie: laptop.cookie } });
    const other = (listed.json() as { id: string; current: boolean }[]).find((s) => !s.current)!;
    const ended = await a.fastify.inject({
      method: 'DELETE',
      url: `/api/auth/sessions/${other.id}`,
      headers: { cookie: laptop.cookie },
    });
    assert.equal(ended.statusCode, 204);
    assert.equal((await check(b, phone.cookie)).statusCode, 403);
    assert.equal((await check(a, phone.cookie)).statusCode, 403);
    assert.equal((await check(b, laptop.cookie)).statusCode, 200);
  });

  test('contract §9: logout everywhere on B ends on A at once every cached session of the user', async () => {
    const sessions = [];
    for (let i = 0; i < 3; i++) sessions.push(await loginAs(a.fastify, 'alice', 'pw'));
    const bob = await loginAs(a.fastify, 'bob', 'pw');
    for (const s of [...sessions, bob]) assert.equal((await check(a, s.cookie)).statusCode, 200);
    const out = await b.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout-everywhere',
      headers: { cookie: sessions[0]!.cookie },
    });
    assert.equal(out.statusCode, 200);
    for (const s of sessions) assert.equal((await check(a, s.cookie)).statusCode, 403);
    assert.equal((await check(a, bob.cookie)).statusCode, 200);
  });

  test('contract §9: the 101st login on B ends the oldest session, cached on A, at once', async () => {
    await a.stores.sessions.revokeUser('alice');
    const first = await loginAs(a.fastify, 'alice', 'pw');
    assert.equal((await check(a, first.cookie)).statusCode, 200);
    for (let i = 0; i < 100; i++) {
      assert.equal((await loginAs(b.fastify, 'alice', 'pw')).response.statusCode, 200);
      await new Promise((resolve) => setTimeout(resolve, 2)); // one creation time each: "oldest" is exact
    }
    assert.equal((await check(a, first.cookie)).statusCode, 403);
  });

  test('a session deleted while its process was idle past the log retention is still refused', async () => {
    const { cookie } = await loginAs(a.fastify, 'alice', 'pw');
    assert.equal((await check(b, cookie)).statusCode, 200);
    await a.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    // A later deletion: the purge keeps the newest entry (the mark a reader checks its place against).
    const bob = await loginAs(a.fastify, 'bob', 'pw');
    await a.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie: bob.cookie } });
    // Alice's entry is purged before B catches up again: B must drop its whole memory rather than
    // trust it.
    await a.stores.sessions.purgeExpired(Date.now() + 11 * 60 * 1000);
    assert.equal((await check(b, cookie)).statusCode, 403);
  });

  // After a live restore of an older backup the deletion log's sequence went backwards; B must not
  // keep waiting for numbers it had already read, miss the later deletions, and serve a deleted
  // session from memory.
  for (const after of ['at once', 'once the sequence has passed where B had read'] as const) {
    test(`a restore of an older backup empties the cache of another process (deletions seen ${after})`, async () => {
      const { cookie } = await loginAs(a.fastify, 'alice', 'pw');
      assert.equal((await check(b, cookie)).statusCode, 200);
      const backupFile = join(mkdtempSync(join(tmpdir(), 'clubhouse-backup-')), 'backup.sqlite');
      const live = new DatabaseSync(a.config.databaseUrl.slice('sqlite:'.length));
      await backup(live, backupFile);
      live.close();
      // Two more deletions, read by B: its place in the log moves past the backup's.
      for (let i = 0; i < 2; i++) {
        const bob = await loginAs(a.fastify, 'bob', 'pw');
        await a.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie: bob.cookie } });
      }
      assert.equal((await check(b, cookie)).statusCode, 200);
      // The live restore (the sqlite3 shell's .restore is the same backup API, the other way).
      const source = new DatabaseSync(backupFile);
      await backup(source, a.config.databaseUrl.slice('sqlite:'.length));
      source.close();
      await a.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
      if (after !== 'at once') {
        for (let i = 0; i < 3; i++) {
          const bob = await loginAs(a.fastify, 'bob', 'pw');
          await a.fastify.inject({
            method: 'POST',
            url: '/api/auth/logout',
            headers: { cookie: bob.cookie },
          });
        }
      }
      assert.equal((await check(b, cookie)).statusCode, 403, 'the logged-out session answered from memory');
    });
  }

  test('expiry is checked on sessions in memory too', async () => {
    const t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }), fixedClock: true });
    try {
      const { cookie } = await loginAs(t.fastify, 'alice', 'pw');
      assert.equal((await check(t, cookie)).statusCode, 200);
      t.clock.advance(1_209_600_000);
      assert.equal((await check(t, cookie)).statusCode, 403);
    } finally {
      await t.close();
    }
  });
});

// A catch-up that stored the new data_version before reading the log would, after one failed read
// (SQLITE_BUSY), never read the log, and answer a deleted session from memory until some other
// connection committed. Two connections to one file, the second with a log read that fails once on
// demand.
describe('the session memory when reading the deletion log fails', () => {
  test('a deleted session is refused after the failure, though nothing else commits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clubhouse-cache-'));
    const file = join(dir, 'db.sqlite');
    const dbA = openSqliteDatabase(file);
    migrateSqlite(dbA);
    const dbB = openSqliteDatabase(file);
    const flaky = lockedOnce(dbB);
    const a = sessionsWithMemory(dbA);
    const b = sessionsWithMemory(flaky.db);
    try {
      const now = Date.now();
      const idHash = Buffer.alloc(32, 7);
      await aliceSession(dbA, a.store, idHash, now);
      assert.equal((await b.store.get(idHash, now))?.username, 'alice');
      assert.equal(b.fromMemory(idHash, now), 'alice', 'kept in B');
      assert.equal(await a.store.delete(idHash), true);
      flaky.arm();
      assert.throws(() => b.catchUp(), /database is locked/);
      assert.equal(flaky.armed(), false, 'the log read was attempted and failed');
      assert.equal(b.fromMemory(idHash, now), undefined, 'B must read the log it missed');
      assert.equal(await b.store.get(idHash, now), null);
    } finally {
      dbB.close();
      dbA.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
