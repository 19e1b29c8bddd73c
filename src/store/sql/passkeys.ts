// The PasskeyStore of contract §12 on either SQL engine: a user's passkeys, their user handle and the
// password switch, each operation written once as steps. The rules that two requests could race on
// are each one statement or one write transaction: a credential id registered once (UNIQUE), the
// last passkey's deletion turning password sign-in back on, the switch turned off only while a
// passkey exists, and a signature counter that only moves forward (a compare-and-set, so two
// instances verifying the same counter value cannot both succeed).
import type { PasskeyOfCredential, PasskeyStore, StoredPasskey } from '../types.ts';
import { change, type SqlDriver, type Steps, select } from './driver.ts';
import { PASSKEY_COLUMNS, toPasskey } from './rows.ts';

const INSERT = `INSERT INTO passkeys (${PASSKEY_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;

/** The passkey operations in `driver`'s dialect. */
function passkeySteps(driver: SqlDriver) {
  const { dialect } = driver;
  // The user's row lock serialises the rules over one user's passkeys (SQLite's write lock does it).
  const lockUser =
    dialect.forUpdate === '' ? null : `SELECT 1 FROM users WHERE username = $1${dialect.forUpdate}`;
  function* locked(username: string): Steps<boolean> {
    const { rows } = yield {
      sql: lockUser ?? 'SELECT 1 FROM users WHERE username = $1',
      params: [username],
    };
    return rows.length > 0;
  }
  const setSwitch = (username: string, on: boolean) =>
    change({ sql: 'UPDATE users SET password_sign_in = $2 WHERE username = $1', params: [username, on] });
  const count = (username: string) =>
    select({ sql: 'SELECT count(*) AS n FROM passkeys WHERE username = $1', params: [username] }, (rows) =>
      Number(rows[0]?.['n'] ?? 0),
    );
  return {
    *userHandle(username: string, candidate: Buffer): Steps<Buffer> {
      yield {
        sql: 'INSERT INTO passkey_users (username, user_handle) VALUES ($1, $2) ON CONFLICT (username) DO NOTHING',
        params: [username, candidate],
      };
      const { rows } = yield {
        sql: 'SELECT user_handle FROM passkey_users WHERE username = $1',
        params: [username],
      };
      return Buffer.from(rows[0]?.['user_handle'] as Uint8Array);
    },
    *add(p: StoredPasskey, retirePassword: boolean): Steps<'added' | 'taken' | 'no-user'> {
      if (!(yield* locked(p.username))) return 'no-user';
      const { rows } = yield {
        sql: 'SELECT 1 FROM passkeys WHERE credential_id = $1',
        params: [p.credentialId],
      };
      if (rows.length > 0) return 'taken';
      const insert = {
        sql: INSERT,
        params: [
          p.handle,
          p.username,
          p.credentialId,
          p.publicKey,
          p.counter,
          JSON.stringify(p.transports),
          p.backedUp,
          p.name,
          p.createdAt,
          p.lastUsedAt,
          p.clonedAt,
        ],
      };
      try {
        yield insert;
      } catch (err) {
        // Another user's registration of the same credential id won the race (their row lock is not ours).
        if (dialect.isUniqueViolation(err)) return 'taken';
        throw err;
      }
      if (retirePassword) yield* setSwitch(p.username, false);
      return 'added';
    },
    list: (username: string): Steps<StoredPasskey[]> =>
      select(
        {
          sql: `SELECT ${PASSKEY_COLUMNS} FROM passkeys WHERE username = $1 ORDER BY created_at DESC, handle DESC`,
          params: [username],
          name: 'passkey-list',
        },
        (rows) => rows.map(toPasskey),
      ),
    byCredentialId: (credentialId: Buffer): Steps<PasskeyOfCredential | null> =>
      select(
        {
          sql: `SELECT ${PASSKEY_COLUMNS.split(', ')
            .map((column) => `p.${column}`)
            .join(', ')}, u.user_handle
            FROM passkeys p JOIN passkey_users u ON u.username = p.username WHERE p.credential_id = $1`,
          params: [credentialId],
          name: 'passkey-by-credential',
        },
        (rows) =>
          rows[0] === undefined
            ? null
            : {
                passkey: toPasskey(rows[0]),
                userHandle: Buffer.from(rows[0]['user_handle'] as Uint8Array),
              },
      ),
    rename: (username: string, handle: string, name: string): Steps<number> =>
      change({
        sql: 'UPDATE passkeys SET name = $3 WHERE username = $1 AND handle = $2',
        params: [username, handle, name],
      }),
    *remove(username: string, handle: string): Steps<boolean> {
      if (!(yield* locked(username))) return false;
      const removed = yield {
        sql: 'DELETE FROM passkeys WHERE username = $1 AND handle = $2',
        params: [username, handle],
      };
      if (removed.changes === 0) return false;
      // contract §12: deleting the last passkey turns password sign-in back on.
      if ((yield* count(username)) === 0) yield* setSwitch(username, true);
      return true;
    },
    *removeAll(username: string): Steps<number> {
      yield* locked(username);
      const removed = yield { sql: 'DELETE FROM passkeys WHERE username = $1', params: [username] };
      yield* setSwitch(username, true);
      return removed.changes;
    },
    *recordUse(
      handle: string,
      counter: number,
      backedUp: boolean,
      now: number,
    ): Steps<'ok' | 'cloned' | 'gone'> {
      // WebAuthn §6.1.1: a counter that does not move forward (both 0: the authenticator keeps none).
      const used = yield {
        sql: `UPDATE passkeys SET counter = $2, backed_up = $3, last_used_at = $4
          WHERE handle = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))`,
        params: [handle, counter, backedUp, now],
        name: 'passkey-use',
      };
      if (used.changes > 0) return 'ok';
      const flagged = yield {
        sql: 'UPDATE passkeys SET cloned_at = coalesce(cloned_at, $2) WHERE handle = $1',
        params: [handle, now],
      };
      return flagged.changes > 0 ? 'cloned' : 'gone';
    },
    exists: (handle: string): Steps<boolean> =>
      select(
        { sql: 'SELECT 1 FROM passkeys WHERE handle = $1', params: [handle], name: 'passkey-exists' },
        (rows) => rows.length > 0,
      ),
    *setPasswordSignIn(username: string, on: boolean): Steps<'ok' | 'no-passkey' | 'no-user'> {
      if (!(yield* locked(username))) return 'no-user';
      if (!on && (yield* count(username)) === 0) return 'no-passkey';
      yield* setSwitch(username, on);
      return 'ok';
    },
  };
}

/** The PasskeyStore over `driver`. */
export function sqlPasskeyStore(driver: SqlDriver): PasskeyStore {
  const steps = passkeySteps(driver);
  const { run } = driver;
  return {
    userHandle: (username, candidate) => run(steps.userHandle(username, candidate), 'write'),
    add: (passkey, retirePassword) => run(steps.add(passkey, retirePassword), 'write'),
    list: (username) => run(steps.list(username)),
    byCredentialId: (credentialId) => run(steps.byCredentialId(credentialId)),
    rename: async (username, handle, name) => (await run(steps.rename(username, handle, name))) > 0,
    remove: (username, handle) => run(steps.remove(username, handle), 'write'),
    removeAll: (username) => run(steps.removeAll(username), 'write'),
    recordUse: (handle, counter, backedUp, now) =>
      run(steps.recordUse(handle, counter, backedUp, now), 'write'),
    exists: (handle) => run(steps.exists(handle)),
    setPasswordSignIn: (username, on) => run(steps.setPasswordSignIn(username, on), 'write'),
  };
}
