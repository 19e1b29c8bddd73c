// The UserStore of contract §2/§4 on either SQL engine, and the secret key kept beside the users.
import type { LoginAdmission, UserRecord, UserStore } from '../types.ts';
import { change, type SqlDriver, type Steps, select } from './driver.ts';
import { toUser, USER_COLUMNS } from './rows.ts';

function getUser(username: string): Steps<UserRecord | null> {
  return select(
    { sql: `SELECT ${USER_COLUMNS} FROM users WHERE username = $1`, params: [username], name: 'user-get' },
    (rows) => (rows[0] === undefined ? null : toUser(rows[0])),
  );
}

/** contract §4: created on first login unless ALLOW_NEW_USERS=false; a disabled user is refused. */
function* recordLogin(username: string, now: number, allowNew: boolean): Steps<LoginAdmission> {
  if (allowNew) {
    yield {
      sql: 'INSERT INTO users (username, active, created_at, last_login_at) VALUES ($1, TRUE, $2, NULL) ON CONFLICT (username) DO NOTHING',
      params: [username, now],
      name: 'user-create',
    };
  }
  const touched = yield {
    sql: 'UPDATE users SET last_login_at = $1 WHERE username = $2 AND active = TRUE',
    params: [now, username],
    name: 'user-touch',
  };
  if (touched.changes > 0) return 'ok';
  return (yield* getUser(username)) === null ? 'unknown' : 'disabled';
}

/** The UserStore over `driver`. */
export function sqlUserStore({ run, dialect }: SqlDriver): UserStore {
  return {
    get: (username) => run(getUser(username)),
    recordLogin: (username, now, allowNew) => run(recordLogin(username, now, allowNew)),
    setActive: async (username, active) =>
      (await run(
        change({ sql: 'UPDATE users SET active = $1 WHERE username = $2', params: [active, username] }),
      )) > 0,
    list: () =>
      run(
        select(
          { sql: `SELECT ${USER_COLUMNS} FROM users ORDER BY username${dialect.binaryOrder}`, params: [] },
          (rows) => rows.map(toUser),
        ),
      ),
  };
}

/** The secret every instance on this database shares: the first one to ask creates it. */
export function* secretKey(candidate: Buffer): Steps<Buffer> {
  // Two statements: the SELECT must see a key another instance inserted concurrently.
  yield {
    sql: "INSERT INTO meta (key, value) VALUES ('throttle_secret', $1) ON CONFLICT (key) DO NOTHING",
    params: [candidate],
  };
  const { rows } = yield { sql: "SELECT value FROM meta WHERE key = 'throttle_secret'", params: [] };
  return Buffer.from(rows[0]?.['value'] as Uint8Array);
}
