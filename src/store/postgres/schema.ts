// Versioned migrations of the PostgreSQL database: the same tables, keys and limits as the SQLite
// ones (sqlite-schema.ts), so that contract §4 is enforced by the database on either engine.
// Times are milliseconds since the epoch in BIGINT, as in SQLite; char_length counts code points.
import type { Migration } from '../sql/migrate.ts';

export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, sessions, throttle',
    sql: `
      CREATE TABLE meta (
        key text PRIMARY KEY,
        value bytea NOT NULL
      );

      CREATE TABLE users (
        username text PRIMARY KEY CHECK (char_length(username) BETWEEN 1 AND 150),
        active boolean NOT NULL DEFAULT true,
        created_at bigint NOT NULL,
        last_login_at bigint
      );

      -- contract §2: only the SHA-256 of a session id is kept.
      CREATE TABLE sessions (
        id_hash bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
        username text NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX sessions_by_username ON sessions (username);
      CREATE INDEX sessions_by_expiry ON sessions (expires_at);

      -- contract §3: one row per distinct failure (key, keyed hash of the password) in the window.
      CREATE TABLE throttle_failures (
        key text NOT NULL,
        fingerprint text NOT NULL,
        at bigint NOT NULL,
        PRIMARY KEY (key, fingerprint)
      );
      CREATE INDEX throttle_failures_by_key_at ON throttle_failures (key, at);
      CREATE INDEX throttle_failures_by_at ON throttle_failures (at);

      CREATE TABLE known_clients (
        username text NOT NULL,
        client_ip text NOT NULL,
        expires_at bigint NOT NULL,
        PRIMARY KEY (username, client_ip)
      );
      CREATE INDEX known_clients_by_expiry ON known_clients (expires_at);
    `,
  },
  {
    version: 2,
    name: 'groups and memberships',
    sql: `
      CREATE TABLE groups (
        id integer PRIMARY KEY CHECK (id BETWEEN 1 AND 2147483647),
        name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
        description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 10000),
        short_description text NOT NULL DEFAULT '' CHECK (char_length(short_description) <= 500),
        activities text NOT NULL DEFAULT '' CHECK (char_length(activities) <= 10000),
        type smallint NOT NULL DEFAULT 0 CHECK (type IN (0, 1)),
        CONSTRAINT groups_name_key UNIQUE (name)
      );

      -- Keyed (username, group_id): the list query is a prefix scan already in group order.
      CREATE TABLE memberships (
        username text NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        group_id integer NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
        status smallint NOT NULL CHECK (status IN (0, 1, 2)),
        PRIMARY KEY (username, group_id)
      );
      CREATE INDEX memberships_by_group ON memberships (group_id);
    `,
  },
  {
    version: 3,
    name: 'guesses in flight',
    sql: `
      -- contract §3: login attempts in flight, one row each (postgres/throttle.ts).
      CREATE TABLE throttle_pending (
        key text NOT NULL,
        id text NOT NULL,
        fingerprint text NOT NULL,
        expires_at bigint NOT NULL,
        PRIMARY KEY (key, id)
      );
      CREATE INDEX throttle_pending_by_expiry ON throttle_pending (expires_at);
    `,
  },
  {
    version: 4,
    name: 'where sessions were started, and when last seen',
    sql: `
      -- contract §9 (as SQLite's version 5): sessions started before keep NULLs.
      ALTER TABLE sessions ADD COLUMN client_ip text;
      ALTER TABLE sessions ADD COLUMN user_agent text CHECK (user_agent IS NULL OR char_length(user_agent) <= 256);
      ALTER TABLE sessions ADD COLUMN last_seen bigint;
    `,
  },
];
