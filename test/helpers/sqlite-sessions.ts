// For the tests of the SQLite session cache (caches/session-cache, caches/group-cache-watch): a live
// session of alice's written through one connection, and a connection whose deletion-log read fails
// once with SQLITE_BUSY when armed: the cache must then try again on the next call rather than trust
// what it holds (issue 12, defect 4).
import type { DatabaseSync } from 'node:sqlite';
import type { SessionStore } from '../../src/store/types.ts';

/** Creates user alice on `db` and, through `store`, a session of hers with id hash `idHash`, live for a minute. */
export async function aliceSession(db: DatabaseSync, store: SessionStore, idHash: Buffer, now: number) {
  db.prepare('INSERT INTO users (username, active, created_at) VALUES (?, 1, ?)').run('alice', now);
  await store.create(
    { idHash, username: 'alice', createdAt: now, expiresAt: now + 60_000, clientIp: null, userAgent: null },
    100,
  );
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
              return inner.all(...(args as [number]));
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
