// A node:sqlite connection whose deletion-log read fails once with SQLITE_BUSY when armed: the
// session cache must then try again on the next call rather than trust what it holds (issue 12,
// defect 4). Used by the session-cache and commit-watch tests.
import type { DatabaseSync } from 'node:sqlite';

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
