// Versioned migrations of the embedded SQLite database, and their runner. Limits of contract §4
// (limits.ts) are enforced here (CHECK, UNIQUE, foreign keys, STRICT types) as well as in the code;
// the limits tests of test/store/contract.test.ts prove the two agree.
import type { DatabaseSync } from 'node:sqlite';
import { GROUP_LOG } from '../freshness/group-log.ts';
import { groupSyncMigration } from '../sql/group-sync-schema.ts';
import { type Migration, migrate } from '../sql/migrate.ts';
import { SQLITE_DIALECT, SQLITE_NOW_MS } from './dialect.ts';
import { sqliteDriver } from './driver.ts';

/**
 * Version 13: each trigger of version 6 also logs what its row touched, under the generation it moved
 * to (freshness/group-log.ts says what each entry names and why): a catch-up then drops those answers
 * alone. Row triggers: every row is a generation of its own (cascades included), logged whoever
 * writes it, an operator's sqlite3 shell too; they move the generation on the same writes as before
 * (the group sync's mark relies on it: sql/group-sync-mark.ts).
 */
const { GROUP_CHANGE_LOG, GROUP_ANSWER_COLUMNS } = (() => {
  /** Logs the rows of `select` (username, group_id, after the generation) under the generation now. */
  const log = (select: string, from = '', where = '') =>
    `INSERT INTO group_changes (generation, username, group_id, at)
        SELECT gg.value, ${select}, ${SQLITE_NOW_MS} FROM group_generation gg ${from} ${where};`;
  const bump = 'UPDATE group_generation SET value = value + 1;';
  /** The users with memberships under a group id that appeared (inserted, or another's id taken). */
  const membersOf = (id: string, where = '') =>
    log('m.username, NULL', `JOIN memberships m ON m.group_id = ${id}`, where);
  const trigger = (name: string, event: string, body: string) => `
      DROP TRIGGER ${name};
      CREATE TRIGGER ${name} ${event}
      BEGIN
        ${bump}
        ${body}
      END;`;
  const groupUpdated = `${log('NULL, old.id')} ${log('NULL, new.id', '', 'WHERE new.id IS NOT old.id')}
        ${membersOf('new.id', 'WHERE new.id IS NOT old.id')}`;
  const changeLog = `
      CREATE TABLE group_changes (
        generation INTEGER NOT NULL,
        username TEXT,
        group_id INTEGER,
        at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX group_changes_by_generation ON group_changes (generation);
      -- Keeps the last ${GROUP_LOG.keptGenerations} generations (a lagging reader finds its next one
      -- gone and drops everything), pruned every ${GROUP_LOG.pruneEvery}th.
      CREATE TRIGGER group_changes_prune AFTER INSERT ON group_changes
        WHEN new.generation % ${GROUP_LOG.pruneEvery} = 0
      BEGIN
        DELETE FROM group_changes WHERE generation <= new.generation - ${GROUP_LOG.keptGenerations};
      END;
      ${trigger('groups_insert_generation', 'AFTER INSERT ON groups', `${log('NULL, new.id')} ${membersOf('new.id')}`)}
      ${trigger('groups_update_generation', 'AFTER UPDATE ON groups', groupUpdated)}
      ${trigger('groups_delete_generation', 'AFTER DELETE ON groups', log('NULL, old.id'))}
      ${trigger('memberships_insert_generation', 'AFTER INSERT ON memberships', log('new.username, NULL'))}
      ${trigger(
        'memberships_update_generation',
        'AFTER UPDATE ON memberships',
        `${log('old.username, NULL')} ${log('new.username, NULL', '', 'WHERE new.username IS NOT old.username')}`,
      )}
      ${trigger('memberships_delete_generation', 'AFTER DELETE ON memberships', log('old.username, NULL'))}
      ${trigger(
        'users_update_generation',
        'AFTER UPDATE OF username ON users WHEN old.username IS NOT new.username',
        `${log('old.username, NULL')} ${log('new.username, NULL')}`,
      )}
      ${trigger('users_delete_generation', 'AFTER DELETE ON users', log('old.username, NULL'))}
    `;
  /**
   * Version 14: an update of a group moves the generation only when it writes a column an answer
   * or the group sync reads (the answers' GROUP_COLUMNS and external_id: sql/group-sync.ts). The
   * search's fill writes search_text alone (and the triggers of version 11 clear it): each such
   * write dropped the group's answers from every process's memory, all of them at the first search
   * after a bulk import. SQLite fires `UPDATE OF` when a listed column is set, changed or not.
   */
  const answerColumns = trigger(
    'groups_update_generation',
    'AFTER UPDATE OF id, name, description, short_description, activities, type, external_id ON groups',
    groupUpdated,
  );
  return { GROUP_CHANGE_LOG: changeLog, GROUP_ANSWER_COLUMNS: answerColumns };
})();

export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, sessions, throttle',
    sql: `
      CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value BLOB NOT NULL
      ) WITHOUT ROWID, STRICT;

      CREATE TABLE users (
        username TEXT PRIMARY KEY CHECK (length(username) BETWEEN 1 AND 150),
        active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
        created_at INTEGER NOT NULL,
        last_login_at INTEGER
      ) WITHOUT ROWID, STRICT;

      -- contract §2: only the SHA-256 of a session id is kept.
      CREATE TABLE sessions (
        id_hash BLOB PRIMARY KEY CHECK (length(id_hash) = 32),
        username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX sessions_by_username ON sessions (username);
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);

      -- contract §3: one row per distinct failure (key, keyed hash of the password) in the window.
      CREATE TABLE throttle_failures (
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (key, fingerprint)
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX throttle_failures_by_key_at ON throttle_failures (key, at);
      CREATE INDEX throttle_failures_by_at ON throttle_failures (at);

      CREATE TABLE known_clients (
        username TEXT NOT NULL,
        client_ip TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (username, client_ip)
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX known_clients_by_expiry ON known_clients (expires_at);
    `,
  },
  {
    version: 2,
    name: 'groups and memberships',
    sql: `
      CREATE TABLE groups (
        id INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
        name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
        description TEXT NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
        short_description TEXT NOT NULL DEFAULT '' CHECK (length(short_description) <= 500),
        activities TEXT NOT NULL DEFAULT '' CHECK (length(activities) <= 10000),
        type INTEGER NOT NULL DEFAULT 0 CHECK (type IN (0, 1))
      ) STRICT;

      -- Keyed (username, group_id): the list query is a prefix scan already in group order.
      CREATE TABLE memberships (
        username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        group_id INTEGER NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
        status INTEGER NOT NULL CHECK (status IN (0, 1, 2)),
        PRIMARY KEY (username, group_id)
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX memberships_by_group ON memberships (group_id);
    `,
  },
  {
    version: 3,
    name: 'session deletion log',
    sql: `
      -- Every process keeps recent sessions in memory (sqlite/sessions.ts). A deletion of a live
      -- session (logout, revoke, disable, rotation) is logged here, in the deleting transaction,
      -- so every other process evicts it before answering its next request. (This version's trigger
      -- reads a clock SQLite 3.42 added: version 9 replaces it.)
      CREATE TABLE session_deletions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id_hash BLOB NOT NULL,
        at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX session_deletions_by_at ON session_deletions (at);
      -- Expired rows need no log entry: every cache checks the expiry itself.
      CREATE TRIGGER sessions_log_deletion AFTER DELETE ON sessions
        WHEN old.expires_at > CAST(unixepoch('subsec') * 1000 AS INTEGER)
      BEGIN
        INSERT INTO session_deletions (id_hash, at) VALUES (old.id_hash, CAST(unixepoch('subsec') * 1000 AS INTEGER));
      END;
    `,
  },
  {
    version: 4,
    name: 'guesses in flight',
    sql: `
      -- contract §3: login attempts in flight, one row each, counted by distinct fingerprint with the
      -- failures of their key, so that parallel guesses cannot pass the limit whichever process
      -- serves them. A row outlives a crashed process only until expires_at.
      CREATE TABLE throttle_pending (
        key TEXT NOT NULL,
        id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (key, id)
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX throttle_pending_by_expiry ON throttle_pending (expires_at);
    `,
  },
  {
    version: 5,
    name: 'where sessions were started, and when last seen',
    sql: `
      -- contract §9: the login request's client address and user agent (cut at 256 characters), and
      -- the last time the session was seen (written in batches, sessions.ts). Sessions started before
      -- this version keep NULLs: they show what is known (when they were created).
      ALTER TABLE sessions ADD COLUMN client_ip TEXT;
      ALTER TABLE sessions ADD COLUMN user_agent TEXT CHECK (user_agent IS NULL OR length(user_agent) <= 256);
      ALTER TABLE sessions ADD COLUMN last_seen INTEGER;
    `,
  },
  {
    version: 6,
    name: 'group generation',
    sql: `
      -- Every process keeps the answers of the group endpoints in memory (groups.ts). Any
      -- change those answers depend on moves this number, in the changing transaction, so that every
      -- process drops its group memory before answering its next request: groups and memberships
      -- (cascades included: a deleted user's or group's memberships fire their own triggers), and
      -- users renamed or deleted (today their memberships follow by foreign key; the cache need not
      -- rely on it). Not logins (last_login_at), new users or the active flag, which change no answer
      -- (a disabled user's sessions end: contract §2).
      CREATE TABLE group_generation (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
      ) STRICT;
      INSERT INTO group_generation (id, value) VALUES (1, 0);
      CREATE TRIGGER groups_insert_generation AFTER INSERT ON groups
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER groups_update_generation AFTER UPDATE ON groups
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER groups_delete_generation AFTER DELETE ON groups
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER memberships_insert_generation AFTER INSERT ON memberships
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER memberships_update_generation AFTER UPDATE ON memberships
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER memberships_delete_generation AFTER DELETE ON memberships
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER users_update_generation AFTER UPDATE OF username ON users
        WHEN old.username IS NOT new.username
      BEGIN UPDATE group_generation SET value = value + 1; END;
      CREATE TRIGGER users_delete_generation AFTER DELETE ON users
      BEGIN UPDATE group_generation SET value = value + 1; END;
    `,
  },
  {
    version: 7,
    name: 'groups from the directory',
    sql: groupSyncMigration({ text: 'TEXT', bigint: 'INTEGER', tableOptions: ' WITHOUT ROWID, STRICT' }),
  },
  {
    version: 8,
    name: 'sign-ins at an identity provider in progress',
    sql: `
      -- contract §10: one row per sign-in started at an identity provider, under the SHA-256 of the
      -- handle its state cookie holds; data is sealed with a key only that handle gives (state,
      -- nonce, PKCE verifier, provider, next). Taken once (DELETE … RETURNING), purged when expired.
      CREATE TABLE oidc_flows (
        id_hash BLOB PRIMARY KEY CHECK (length(id_hash) = 32),
        data BLOB NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX oidc_flows_by_expiry ON oidc_flows (expires_at);
    `,
  },
  {
    version: 9,
    name: 'session log on every SQLite, and session changes logged',
    sql: `
      -- The triggers run in whichever SQLite writes the file: the service's, the clubhouse command's,
      -- or an operator's sqlite3 shell (Debian 12's is 3.40). Version 3's trigger read
      -- unixepoch('subsec'), NULL before 3.42: its condition was never true there, so a session
      -- deleted by such a shell was not logged, and memory kept answering it. The clock below works on
      -- every SQLite that can read this schema (STRICT tables: 3.37 and later).
      DROP TRIGGER sessions_log_deletion;
      CREATE TRIGGER sessions_log_deletion AFTER DELETE ON sessions
        WHEN old.expires_at > ${SQLITE_NOW_MS}
      BEGIN
        INSERT INTO session_deletions (id_hash, at) VALUES (old.id_hash, ${SQLITE_NOW_MS});
      END;
      -- An update that ends a session early (or extends it), or moves it to another user or id, is
      -- logged like a deletion: memory reads the session again. last_seen changes none of these.
      CREATE TRIGGER sessions_log_change AFTER UPDATE OF id_hash, username, expires_at ON sessions
        WHEN old.id_hash IS NOT new.id_hash OR old.username IS NOT new.username
          OR old.expires_at IS NOT new.expires_at
      BEGIN
        INSERT INTO session_deletions (id_hash, at) VALUES (old.id_hash, ${SQLITE_NOW_MS});
      END;
    `,
  },
  {
    version: 10,
    name: 'passkeys',
    sql: `
      -- contract §12: a user may turn password sign-in off (the who-may-log-in rule reads it with
      -- the user), has one random user handle (never the username), and keeps passkeys: the
      -- credential id (unique across users), the COSE public key, the signature counter, transports
      -- (a JSON array), the backed-up flag, a name, and when it was flagged as cloned (a counter that
      -- did not move forward). A session records how it signed in, and with which passkey.
      ALTER TABLE users ADD COLUMN password_sign_in INTEGER NOT NULL DEFAULT 1 CHECK (password_sign_in IN (0, 1));
      CREATE TABLE passkey_users (
        username TEXT PRIMARY KEY REFERENCES users (username) ON DELETE CASCADE,
        user_handle BLOB NOT NULL UNIQUE CHECK (length(user_handle) = 32)
      ) WITHOUT ROWID, STRICT;
      CREATE TABLE passkeys (
        handle TEXT PRIMARY KEY CHECK (length(handle) = 32),
        credential_id BLOB NOT NULL UNIQUE CHECK (length(credential_id) BETWEEN 1 AND 1023),
        username TEXT NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        public_key BLOB NOT NULL CHECK (length(public_key) <= 2048),
        counter INTEGER NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
        transports TEXT NOT NULL CHECK (length(transports) <= 200),
        backed_up INTEGER NOT NULL CHECK (backed_up IN (0, 1)),
        name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        cloned_at INTEGER
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX passkeys_by_username ON passkeys (username);
      ALTER TABLE sessions ADD COLUMN sign_in_method TEXT CHECK (sign_in_method IN ('password', 'oidc', 'passkey'));
      ALTER TABLE sessions ADD COLUMN passkey TEXT;
    `,
  },
  {
    version: 11,
    name: 'joining and running a group',
    sql: `
      -- contract §13: when a membership took its status (a request made, approved, promoted), shown
      -- to the group's administrators. Written by the service (sql/memberships.ts), and set by these
      -- triggers when a writer leaves it out (an import, the sync, a merge, an operator's sqlite3
      -- shell); NULL for rows older than this version.
      ALTER TABLE memberships ADD COLUMN since INTEGER;
      CREATE TRIGGER memberships_since_insert AFTER INSERT ON memberships WHEN new.since IS NULL
      BEGIN
        UPDATE memberships SET since = ${SQLITE_NOW_MS}
          WHERE username = new.username AND group_id = new.group_id;
      END;
      CREATE TRIGGER memberships_since_update AFTER UPDATE OF status ON memberships
        WHEN old.status IS NOT new.status AND old.since IS new.since
      BEGIN
        UPDATE memberships SET since = ${SQLITE_NOW_MS}
          WHERE username = new.username AND group_id = new.group_id;
      END;

      -- contract §13: the group search's folded text (sql/group-search.ts), written by the service;
      -- NULL until then. Any change of what it folds clears it, whoever writes it, and the partial
      -- index finds the rows to fold again.
      ALTER TABLE groups ADD COLUMN search_text TEXT;
      CREATE INDEX groups_unsearched ON groups (id) WHERE search_text IS NULL;
      CREATE TRIGGER groups_search_text_stale AFTER UPDATE OF name, short_description, description ON groups
        WHEN old.name IS NOT new.name OR old.short_description IS NOT new.short_description
          OR old.description IS NOT new.description
      BEGIN
        UPDATE groups SET search_text = NULL WHERE id = new.id;
      END;
      CREATE TRIGGER groups_search_text_insert AFTER INSERT ON groups WHEN new.search_text IS NOT NULL
      BEGIN
        UPDATE groups SET search_text = NULL WHERE id = new.id;
      END;
    `,
  },
  {
    version: 12,
    name: 'the group search index',
    sql: `
      -- contract §13: the group search's trigram index (sql/group-search.ts) over the folded text.
      -- FTS5's trigram tokenizer, case_sensitive so that it folds nothing itself and the trigrams are
      -- the code points the JavaScript folding left; detail=none, as the search only asks which
      -- groups hold a trigram. The table keeps its own copy of the text, so that a row can go by its
      -- rowid alone (an external-content table would need the exact text it indexed).
      CREATE VIRTUAL TABLE group_search USING fts5(search_text, tokenize = 'trigram case_sensitive 1', detail = none);
      -- It follows groups.search_text whoever writes: cleared (version 11's triggers), refilled,
      -- moved to another id, or the group deleted.
      CREATE TRIGGER groups_search_index AFTER UPDATE OF id, search_text ON groups
        WHEN old.id IS NOT new.id OR old.search_text IS NOT new.search_text
      BEGIN
        DELETE FROM group_search WHERE rowid IN (old.id, new.id);
        INSERT INTO group_search (rowid, search_text) SELECT new.id, new.search_text WHERE new.search_text IS NOT NULL;
      END;
      CREATE TRIGGER groups_search_unindex AFTER DELETE ON groups
      BEGIN
        DELETE FROM group_search WHERE rowid = old.id;
      END;
      -- The texts folded before this version are folded and indexed by the next search.
      UPDATE groups SET search_text = NULL;
    `,
  },
  {
    version: 13,
    name: 'group change log',
    sql: GROUP_CHANGE_LOG,
  },
  {
    version: 14,
    name: 'group changes: the answers’ columns only',
    sql: GROUP_ANSWER_COLUMNS,
  },
];

/** Applies pending migrations; safe when several processes start at once. Returns the versions applied. */
export function migrateSqlite(db: DatabaseSync): number[] {
  // The IMMEDIATE transaction's write lock makes concurrent starts queue.
  return sqliteDriver(db).runSync(migrate(SQLITE_DIALECT, SQLITE_MIGRATIONS, Date.now()), 'write');
}
