// For the tests of SQLite's session memory (caches/session-cache, caches/group-cache-watch): a live
// session of alice's written through one connection, the session store with memory on a connection
// (as sqlite/store.ts builds it, over a commit watch or none), and a connection whose deletion-log
// read fails once with SQLITE_BUSY when armed: memory must then catch up again on the next request
// rather than trust what it holds.
import type { DatabaseSync } from 'node:sqlite';
import { answerWindows, withWindowsOpen } from '../../src/store/freshness/gate.ts';
import { type CommitWatch, unwatched } from '../../src/store/sqlite/commit-watch.ts';
import { sqliteDriver } from '../../src/store/sqlite/driver.ts';
import { sqliteCatchUp } from '../../src/store/sqlite/freshness.ts';
import { sqliteSessionMemory } from '../../src/store/sqlite/sessions.ts';
import type { SessionStore } from '../../src/store/types.ts';

/** Creates user alice on `db` and, through `store`, a session of hers with id hash `idHash`, live for a minute. */
export async function aliceSession(db: DatabaseSync, store: SessionStore, idHash: Buffer, now: number) {
  db.prepare('INSERT INTO users (username, active, created_at) VALUES (?, 1, ?)').run('alice', now);
  await store.create(
    { idHash, username: 'alice', createdAt: now, expiresAt: now + 60_000, clientIp: null, userAgent: null },
    100,
  );
}

export interface SessionsWithMemory {
  readonly store: SessionStore;
  /** A catch-up, as the freshness gate runs it before an answer; throws when it fails. */
  catchUp(): void;
  /**
   * The username memory answers after a catch-up (as the raw read path asks), or undefined: not kept,
   * or the catch-up failed (the request then goes to the store).
   */
  fromMemory(idHash: Buffer, now: number): string | undefined;
}

/** The SQLite session store with memory on `db`, caught up over `watch`. */
export function sessionsWithMemory(db: DatabaseSync, watch: CommitWatch = unwatched()): SessionsWithMemory {
  const windows = answerWindows();
  const sessions = sqliteSessionMemory(db, sqliteDriver(db), windows.sessions, 1000);
  const catchUpMemories = sqliteCatchUp(watch, { sessions: sessions.catchUp });
  const catchUp = () => catchUpMemories(['sessions']);
  return {
    store: sessions.store,
    catchUp,
    fromMemory(idHash, now) {
      try {
        catchUp();
      } catch {
        return undefined;
      }
      return withWindowsOpen(windows, ['sessions'], () =>
        sessions.answers.answer(idHash.toString('hex'), now),
      )?.username;
    },
  };
}

export interface LockedOnce {
  /** The connection to hand to the store. */
  readonly db: DatabaseSync;
  /** The next read of the deletion log throws `database is locked`. */
  arm(): void;
  /** True until the armed read has happened. */
  armed(): boolean;
}

export function lockedOnce(db: DatabaseSync): LockedOnce {
  let armed = false;
  const proxy = new Proxy(db, {
    get(target, key) {
      if (key !== 'prepare') return Reflect.get(target, key, target);
      return (sql: string) => {
        const statement = target.prepare(sql);
        if (!sql.includes('FROM session_deletions WHERE seq >')) return statement;
        return new Proxy(statement, {
          get(inner, name) {
            const value = Reflect.get(inner, name, inner);
            if (name !== 'all') return typeof value === 'function' ? value.bind(inner) : value;
            return (...args: unknown[]) => {
              if (armed) {
                armed = false;
                throw Object.assign(new Error('database is locked'), { errcode: 5 });
              }
              return inner.all(...(args as [number, number]));
            };
          },
        });
      };
    },
  });
  return {
    db: proxy,
    arm: () => {
      armed = true;
    },
    armed: () => armed,
  };
}
