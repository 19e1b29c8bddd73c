// Versioned migrations of the PostgreSQL database, and their runner: the same tables, keys and limits
// as the SQLite ones (sqlite/schema.ts), so that contract §4 is enforced by the database on either
// engine. Times are milliseconds since the epoch in BIGINT, as in SQLite; char_length counts code
// points.
import pg from 'pg';
import { stepAsync } from '../sql/driver.ts';
import { groupSyncMigration } from '../sql/group-sync-schema.ts';
import { type Migration, migrate } from '../sql/migrate.ts';
import { POSTGRES_DIALECT } from './dialect.ts';
import {
  mapPostgresError,
  onClient,
  POOL_SETTINGS,
  type PostgresConnection,
  postgresConnection,
} from './driver.ts';
import {
  GROUP_ANSWER_COLUMNS,
  GROUP_CHANGE_LOG,
  GROUP_GENERATION,
  SESSION_CHANGE_LOG,
  SESSION_DELETION_LOG,
} from './freshness-schema.ts';

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
      -- contract §3: login attempts in flight, one row each (sql/throttle.ts).
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
  {
    version: 5,
    name: 'groups from the directory',
    sql: groupSyncMigration({ text: 'text', bigint: 'bigint', tableOptions: '' }),
  },
  {
    version: 6,
    name: 'sign-ins at an identity provider in progress',
    sql: `
      -- contract §10 (as SQLite's version 8): taken once, purged when expired.
      CREATE TABLE oidc_flows (
        id_hash bytea PRIMARY KEY CHECK (octet_length(id_hash) = 32),
        data bytea NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX oidc_flows_by_expiry ON oidc_flows (expires_at);
    `,
  },
  { version: 7, name: 'group generation', sql: GROUP_GENERATION },
  { version: 8, name: 'session deletion log', sql: SESSION_DELETION_LOG },
  { version: 9, name: 'session changes logged as deletions', sql: SESSION_CHANGE_LOG },
  {
    version: 10,
    name: 'passkeys',
    sql: `
      -- contract §12 (as SQLite's version 10).
      ALTER TABLE users ADD COLUMN password_sign_in boolean NOT NULL DEFAULT TRUE;
      CREATE TABLE passkey_users (
        username text PRIMARY KEY REFERENCES users (username) ON DELETE CASCADE,
        user_handle bytea NOT NULL UNIQUE CHECK (octet_length(user_handle) = 32)
      );
      CREATE TABLE passkeys (
        handle text PRIMARY KEY CHECK (char_length(handle) = 32),
        credential_id bytea NOT NULL UNIQUE CHECK (octet_length(credential_id) BETWEEN 1 AND 1023),
        username text NOT NULL REFERENCES users (username) ON DELETE CASCADE,
        public_key bytea NOT NULL CHECK (octet_length(public_key) <= 2048),
        counter bigint NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
        transports text NOT NULL CHECK (char_length(transports) <= 200),
        backed_up boolean NOT NULL,
        name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
        created_at bigint NOT NULL,
        last_used_at bigint,
        cloned_at bigint
      );
      CREATE INDEX passkeys_by_username ON passkeys (username);
      ALTER TABLE sessions ADD COLUMN sign_in_method text CHECK (sign_in_method IN ('password', 'oidc', 'passkey'));
      ALTER TABLE sessions ADD COLUMN passkey text;
    `,
  },
  {
    version: 11,
    name: 'joining and running a group',
    sql: `
      -- As SQLite's version 11 (contract §13): when a membership took its status, written by the
      -- service, else by a default for new rows and a trigger for changes; NULL for older rows.
      ALTER TABLE memberships ADD COLUMN since bigint;
      ALTER TABLE memberships ALTER COLUMN since SET DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
      CREATE FUNCTION membership_since() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.since := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
        RETURN NEW;
      END $$;
      CREATE TRIGGER memberships_since BEFORE UPDATE OF status ON memberships FOR EACH ROW
        WHEN (OLD.status IS DISTINCT FROM NEW.status AND OLD.since IS NOT DISTINCT FROM NEW.since)
        EXECUTE FUNCTION membership_since();

      -- The group search's folded text (sql/group-search.ts), cleared when what it folds changes.
      ALTER TABLE groups ADD COLUMN search_text text;
      CREATE INDEX groups_unsearched ON groups (id) WHERE search_text IS NULL;
      CREATE FUNCTION group_search_text_stale() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.search_text := NULL;
        RETURN NEW;
      END $$;
      CREATE TRIGGER groups_search_text_stale BEFORE UPDATE OF name, short_description, description ON groups
        FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name
          OR OLD.short_description IS DISTINCT FROM NEW.short_description
          OR OLD.description IS DISTINCT FROM NEW.description)
        EXECUTE FUNCTION group_search_text_stale();
      CREATE TRIGGER groups_search_text_insert BEFORE INSERT ON groups FOR EACH ROW
        WHEN (NEW.search_text IS NOT NULL) EXECUTE FUNCTION group_search_text_stale();
    `,
  },
  {
    version: 12,
    name: 'the group search index',
    sql: `
      -- As SQLite's version 12 (contract §13): the group search's trigram index. The trigrams of each
      -- group's folded text within its fields, written by the fill in the transaction that writes
      -- search_text (sql/group-search.ts), under a GIN index (core PostgreSQL: no extension to
      -- create). A table beside groups, not a column: an array of a hundred trigrams in each row
      -- would make every scan of groups read several times the bytes.
      CREATE TABLE group_trigrams (
        group_id integer PRIMARY KEY,
        trigrams text[] NOT NULL
      );
      CREATE INDEX group_trigrams_index ON group_trigrams USING gin (trigrams);
      -- A row of a group whose search_text is NULL matches nothing, so a stale row is harmless until
      -- the fill replaces it; these keep rows from outliving their group, whoever deletes it. A
      -- group given another id is folded again (version 11's trigger, now on the id too).
      CREATE FUNCTION group_trigrams_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM group_trigrams t USING old_rows o WHERE t.group_id = o.id;
        RETURN NULL;
      END $$;
      CREATE TRIGGER groups_trigrams_delete AFTER DELETE ON groups REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION group_trigrams_deleted();
      CREATE FUNCTION group_trigrams_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        TRUNCATE group_trigrams;
        RETURN NULL;
      END $$;
      CREATE TRIGGER groups_trigrams_truncate AFTER TRUNCATE ON groups
        FOR EACH STATEMENT EXECUTE FUNCTION group_trigrams_truncated();
      DROP TRIGGER groups_search_text_stale ON groups;
      CREATE TRIGGER groups_search_text_stale BEFORE UPDATE OF id, name, short_description, description
        ON groups FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.name IS DISTINCT FROM NEW.name
          OR OLD.short_description IS DISTINCT FROM NEW.short_description
          OR OLD.description IS DISTINCT FROM NEW.description)
        EXECUTE FUNCTION group_search_text_stale();
      -- The texts folded before this version are folded and indexed by the next search.
      UPDATE groups SET search_text = NULL;
    `,
  },
  { version: 13, name: 'group change log', sql: GROUP_CHANGE_LOG },
  { version: 14, name: 'group changes: the answers’ columns only', sql: GROUP_ANSWER_COLUMNS },
];

// Any constant works; it only has to be the same for every clubhouse process on a database.
const MIGRATION_LOCK_KEY = 4_242_001;

/**
 * Applies pending migrations in one transaction under an advisory lock, so instances starting at
 * once queue instead of racing. Uses its own connection without the pool's short timeouts. Behind a
 * transaction pooler, also sets the pool's timeouts as this role's defaults in this database (docs/operations.md, PgBouncer).
 */
export async function migratePostgres(target: string | PostgresConnection): Promise<number[]> {
  const connection = typeof target === 'string' ? postgresConnection(target) : target;
  const client = new pg.Client({
    connectionString: connection.url,
    ssl: connection.ssl,
    connectionTimeoutMillis: 10_000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('BEGIN');
    // Released by COMMIT/ROLLBACK; the lock space is per database.
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    // The runner the SQLite store uses too (sql/migrate.ts), on this connection.
    const applied = await stepAsync(
      migrate(POSTGRES_DIALECT, POSTGRES_MIGRATIONS, Date.now()),
      onClient(client),
    );
    // Only behind a pooler: a direct pool sends the timeouts at connect, and role defaults would also
    // bind every other client of this role (an operator's psql, a bulk load) to them.
    if (connection.transactionPooler) await setRoleTimeouts(client);
    await client.query('COMMIT');
    if (connection.transactionPooler) await retireIfUntimed(client);
    return applied;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    mapPostgresError(err);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Makes the pool's statement and lock timeouts the defaults of the current role in the current
 * database: a transaction-mode pooler cannot carry them as startup parameters, and SET would stay
 * on a server connection that other clients then use. Own-role defaults need no superuser.
 */
async function setRoleTimeouts(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ name: string }>('SELECT current_database() AS name');
  const database = client.escapeIdentifier(rows[0]!.name);
  for (const setting of ['statement_timeout', 'lock_timeout'] as const) {
    // Whole numbers from our own constant: nothing outside reaches this text.
    await client.query(
      `ALTER ROLE CURRENT_USER IN DATABASE ${database} SET ${setting} = ${Number(POOL_SETTINGS[setting])}`,
    );
  }
}

/**
 * Role defaults apply to sessions that start later. Behind a transaction-mode pooler, the server
 * session this migration ran on (opened before the defaults existed, or while waiting for the
 * lock) would next serve the pool without timeouts: end it, so the pooler opens a fresh one.
 */
async function retireIfUntimed(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ name: string; setting: string }>(
    "SELECT name, setting FROM pg_settings WHERE name IN ('statement_timeout', 'lock_timeout')",
  );
  const timed = rows.every(
    (row) => Number(row.setting) === POOL_SETTINGS[row.name as 'statement_timeout' | 'lock_timeout'],
  );
  // The pooler sees its server connection end and drops it; our own client is closed right after.
  if (!timed) await client.query('SELECT pg_terminate_backend(pg_backend_pid())').catch(() => {});
}
