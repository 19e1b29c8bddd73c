// The commit watch (src/store/sqlite/commit-watch.ts) that tells the session and group memories
// whether anything was committed since they last caught up, by comparing the WAL-index header at the
// start of the -shm file with the bytes seen last. Torn headers, WAL resets, no -shm at all, the
// shared descriptor, and the session memory's catching up on top of it.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { SERVING_MEMORY } from '../../src/app.ts';
import {
  headerWatch,
  isCompleteHeader,
  openShmFiles,
  unwatched,
  WAL_INDEX_HEADER_BYTES,
  watchCommits,
} from '../../src/store/sqlite/commit-watch.ts';
import { openSqliteDatabase } from '../../src/store/sqlite/driver.ts';
import { sqliteCatchUp } from '../../src/store/sqlite/freshness.ts';
import { migrateSqlite } from '../../src/store/sqlite/schema.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';
import { aliceSession, lockedOnce, sessionsWithMemory } from '../helpers/sqlite-sessions.ts';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'clubhouse-watch-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const freshFile = () => join(dir, `db-${++files}.sqlite`);

/** The WAL-index header as it is now, read the way the watch reads it. */
function headerOf(file: string): Buffer {
  const fd = openSync(`${file}-shm`, 'r');
  const header = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  readSync(fd, header, 0, WAL_INDEX_HEADER_BYTES, 0);
  // The descriptor stays open on purpose: closing it would drop this process's SQLite locks on the
  // file (the reason the watch shares one descriptor); the test process ends soon enough.
  return header;
}

describe('the WAL-index header', () => {
  test('a header SQLite wrote verifies; a flipped byte or a torn mix of two headers does not', () => {
    const file = freshFile();
    const db = openSqliteDatabase(file);
    try {
      db.exec('CREATE TABLE t (x INTEGER)');
      const old = headerOf(file);
      db.exec('INSERT INTO t VALUES (1)');
      const fresh = headerOf(file);
      assert.ok(isCompleteHeader(old) && isCompleteHeader(fresh));
      assert.ok(!old.equals(fresh), 'a commit rewrites the header');
      for (let at = 0; at < WAL_INDEX_HEADER_BYTES; at++) {
        const flipped = Buffer.from(fresh);
        flipped[at]! ^= 0x10;
        assert.equal(isCompleteHeader(flipped), false, `byte ${at} flipped`);
      }
      // A reader racing a writer's memcpy sees some new bytes and some old, in either order.
      let torn = 0;
      for (let cut = 1; cut < WAL_INDEX_HEADER_BYTES; cut++) {
        for (const [first, second] of [
          [fresh, old],
          [old, fresh],
        ] as const) {
          const mix = Buffer.concat([first.subarray(0, cut), second.subarray(cut)]);
          if (mix.equals(old) || mix.equals(fresh)) continue;
          torn++;
          assert.equal(isCompleteHeader(mix), false, `torn at byte ${cut}`);
        }
      }
      assert.ok(torn > 0);
    } finally {
      db.close();
    }
  });
});

describe('headerWatch: the protocol over scripted reads', () => {
  const header = (file: string) => headerOf(file);
  test('the epoch stays on the same header, moves on a new one, a torn one or a failed read', () => {
    const file = freshFile();
    const db = openSqliteDatabase(file);
    try {
      db.exec('CREATE TABLE t (x INTEGER)');
      const h1 = header(file);
      db.exec('INSERT INTO t VALUES (1)');
      const h2 = header(file);
      const torn = Buffer.concat([h2.subarray(0, 12), h1.subarray(12)]);
      assert.equal(isCompleteHeader(torn), false);
      const script: (Buffer | null)[] = [h1, h1, torn, torn, h2, h2, null, h2, h2];
      let released = 0;
      const watch = headerWatch(
        (into) => {
          const next = script.shift();
          if (next === undefined || next === null) return false;
          next.copy(into);
          return true;
        },
        () => released++,
      );
      const epochs = Array.from({ length: script.length }, () => watch.epoch());
      // h1 saved; h1 again: no commit. The torn header differs (maybe a commit), and is not saved,
      // so reading it again still says maybe; h2 is saved; a failed read says maybe and forgets h2.
      const [a, b, c, d, e, f, g, h, i] = epochs;
      assert.equal(a, b);
      assert.ok(c! > b! && d! > c! && e! > d!, 'torn headers move the epoch every time');
      assert.equal(e, f);
      assert.ok(g! > f! && h! > g!, 'a failed read moves the epoch, and the next read too');
      assert.equal(h, i);
      watch.close();
      watch.close();
      assert.equal(released, 1);
      assert.ok(watch.epoch() > i!, 'a closed watch says maybe');
    } finally {
      db.close();
    }
  });
});

describe('the SQLite catch-up: one read of the header per request', () => {
  test('a catch-up of both memories reads the file once; each request reads afresh', () => {
    let reads = 0;
    const inner = unwatched(); // moves on every read: each read is visible in the epoch
    const counted = { ...inner, epoch: () => ++reads && inner.epoch() };
    const ran: string[] = [];
    const catchUp = sqliteCatchUp(counted, {
      sessions: () => ran.push('sessions'),
      groups: () => ran.push('groups'),
    });
    catchUp(['sessions', 'groups']);
    assert.equal(reads, 1);
    assert.deepEqual(ran, ['sessions', 'groups'], 'every memory of one request caught up by the same read');
    catchUp(['sessions']);
    assert.equal(reads, 2, 'the next request reads again');
    assert.deepEqual(ran, ['sessions', 'groups', 'sessions'], 'the epoch moved: the exact check runs');
    catchUp(['groups']);
    assert.equal(reads, 3, 'each request reads afresh');
  });

  test('a commit between two requests is seen by the second, on a real file', () => {
    const file = freshFile();
    const a = openSqliteDatabase(file);
    const b = openSqliteDatabase(file);
    migrateSqlite(a);
    const watch = watchCommits(a);
    let checks = 0;
    const catchUp = sqliteCatchUp(watch, { sessions: () => checks++ });
    try {
      catchUp(['sessions']);
      assert.equal(checks, 1);
      catchUp(['sessions']);
      assert.equal(checks, 1, 'nothing committed: no exact check');
      b.exec("INSERT INTO users (username, created_at) VALUES ('bob', 1)");
      catchUp(['sessions']);
      assert.equal(checks, 2, 'the next request sees the commit');
    } finally {
      a.close();
      b.close();
      watch.close();
    }
  });
});

describe('watchCommits on a real file', () => {
  test('nothing committed: the same epoch; a commit by another connection or by this one moves it', () => {
    const file = freshFile();
    const a = openSqliteDatabase(file);
    const b = openSqliteDatabase(file);
    migrateSqlite(a);
    const watch = watchCommits(a);
    try {
      assert.equal(watch.shared, true);
      const first = watch.epoch();
      assert.equal(watch.epoch(), first);
      a.prepare('SELECT count(*) FROM users').get(); // reads commit nothing
      assert.equal(watch.epoch(), first);
      b.exec("INSERT INTO users (username, created_at) VALUES ('bob', 1)");
      const second = watch.epoch();
      assert.ok(second > first, 'another connection committed');
      assert.equal(watch.epoch(), second);
      a.exec("INSERT INTO users (username, created_at) VALUES ('carol', 1)");
      const third = watch.epoch();
      assert.ok(third > second, 'this connection committed');
      // A transaction that writes nothing commits nothing.
      b.exec('BEGIN IMMEDIATE; COMMIT');
      assert.equal(watch.epoch(), third);
    } finally {
      a.close();
      b.close();
      watch.close();
    }
  });

  test('a checkpoint that resets the WAL, and the commits after it, move the epoch', () => {
    const file = freshFile();
    const a = openSqliteDatabase(file);
    const b = openSqliteDatabase(file);
    migrateSqlite(a);
    const watch = watchCommits(a);
    try {
      b.exec("INSERT INTO users (username, created_at) VALUES ('bob', 1)");
      const before = watch.epoch();
      b.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      const reset = watch.epoch();
      assert.ok(reset > before, 'the reset rewrote the header: maybe');
      assert.equal(watch.epoch(), reset);
      b.exec("INSERT INTO users (username, created_at) VALUES ('carol', 1)");
      assert.ok(watch.epoch() > reset, 'the first commit of the new WAL');
    } finally {
      a.close();
      b.close();
      watch.close();
    }
  });

  test('no -shm file to read (:memory:, rollback journal, WAL with exclusive locking): every call says maybe', () => {
    const memory = new DatabaseSync(':memory:');
    const rollback = new DatabaseSync(freshFile());
    rollback.exec('PRAGMA journal_mode = DELETE; CREATE TABLE t (x INTEGER)');
    // Exclusive locking before WAL keeps the WAL index in the heap: WAL mode, and no -shm file.
    const exclusiveFile = freshFile();
    const exclusive = new DatabaseSync(exclusiveFile);
    exclusive.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER)');
    assert.equal(exclusive.prepare('PRAGMA journal_mode').get()?.['journal_mode'], 'wal');
    assert.equal(existsSync(`${exclusiveFile}-shm`), false);
    try {
      for (const db of [memory, rollback, exclusive]) {
        const watch = watchCommits(db);
        assert.equal(watch.shared, false);
        const first = watch.epoch();
        assert.ok(watch.epoch() > first);
        watch.close();
      }
    } finally {
      for (const db of [memory, rollback, exclusive]) db.close();
    }
  });

  test('one descriptor per -shm file per process, closed after the last store on the file', async () => {
    const file = freshFile();
    const before = openShmFiles();
    // Stores that keep memories (a serving process's) watch the file; the command line's do not.
    const a = openSqliteStores(file, { memory: SERVING_MEMORY });
    const b = openSqliteStores(file, { memory: SERVING_MEMORY });
    const other = openSqliteStores(freshFile(), { memory: SERVING_MEMORY });
    const unwatching = openSqliteStores(file);
    await unwatching.close();
    assert.equal(openShmFiles(), before + 2);
    await a.close();
    assert.equal(openShmFiles(), before + 2, 'b still uses it');
    await b.close();
    await other.close();
    assert.equal(openShmFiles(), before);
  });
});

// The session memory on the watch: from memory with no statement at all while nothing is committed,
// and a failed catch-up retried though the header is the same.
describe('the session memory on the watch', () => {
  test('no PRAGMA data_version while nothing is committed; one after a commit elsewhere', async () => {
    const file = freshFile();
    const dbA = openSqliteDatabase(file);
    migrateSqlite(dbA);
    const dbB = openSqliteDatabase(file);
    let pragmas = 0;
    const counted = new Proxy(dbB, {
      get(target, key) {
        if (key !== 'prepare') return Reflect.get(target, key, target);
        return (sql: string) => {
          const statement = target.prepare(sql);
          if (sql !== 'PRAGMA data_version') return statement;
          return new Proxy(statement, {
            get(inner, name) {
              const value = Reflect.get(inner, name, inner);
              if (name !== 'get') return typeof value === 'function' ? value.bind(inner) : value;
              return () => {
                pragmas++;
                return inner.get();
              };
            },
          });
        };
      },
    });
    const watch = watchCommits(dbB);
    const a = sessionsWithMemory(dbA);
    const b = sessionsWithMemory(counted, watch);
    try {
      const now = Date.now();
      const idHash = Buffer.alloc(32, 9);
      await aliceSession(dbA, a.store, idHash, now);
      assert.equal((await b.store.get(idHash, now))?.username, 'alice');
      assert.equal(b.fromMemory(idHash, now), 'alice', 'kept in B: caught up with the session written');
      pragmas = 0;
      for (let i = 0; i < 100; i++) assert.equal(b.fromMemory(idHash, now), 'alice');
      assert.equal(pragmas, 0, 'answered from memory without a statement');
      dbA.exec("UPDATE users SET last_login_at = 1 WHERE username = 'alice'");
      assert.equal(b.fromMemory(idHash, now), 'alice');
      assert.equal(pragmas, 1, 'one data_version after a commit elsewhere');
      assert.equal(b.fromMemory(idHash, now), 'alice');
      assert.equal(pragmas, 1);
      assert.equal(await a.store.delete(idHash), true);
      assert.equal(b.fromMemory(idHash, now), undefined, 'the deletion is seen at once');
      assert.equal(await b.store.get(idHash, now), null);
    } finally {
      dbB.close();
      dbA.close();
      watch.close();
    }
  });

  test('a failed read of the deletion log is retried on the next call, though nothing else commits', async () => {
    const file = freshFile();
    const dbA = openSqliteDatabase(file);
    migrateSqlite(dbA);
    const dbB = openSqliteDatabase(file);
    const flaky = lockedOnce(dbB);
    const watch = watchCommits(dbB);
    assert.equal(watch.shared, true);
    const a = sessionsWithMemory(dbA);
    const b = sessionsWithMemory(flaky.db, watch);
    try {
      const now = Date.now();
      const idHash = Buffer.alloc(32, 7);
      await aliceSession(dbA, a.store, idHash, now);
      assert.equal((await b.store.get(idHash, now))?.username, 'alice');
      assert.equal(b.fromMemory(idHash, now), 'alice', 'kept in B');
      assert.equal(await a.store.delete(idHash), true);
      flaky.arm();
      assert.equal(b.fromMemory(idHash, now), undefined, 'the failure is left to the store');
      assert.equal(flaky.armed(), false, 'the log read was attempted and failed');
      // The header has not changed since the failed attempt: memory must still catch up, and forget
      // the session (a miss) rather than answer it.
      assert.equal(b.fromMemory(idHash, now), undefined, 'B read the log it missed');
      assert.equal(await b.store.get(idHash, now), null);
    } finally {
      dbB.close();
      dbA.close();
      watch.close();
    }
  });
});
