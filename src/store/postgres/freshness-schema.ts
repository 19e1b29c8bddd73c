// The PostgreSQL migrations behind the answers from memory (schema.ts lists them in order; the design
// is docs/freshness.md): what moves in the writing transaction, so that every instance's next
// catch-up sees it.

/** Version 7: group_generation, as SQLite's version 6. */
export const GROUP_GENERATION = `
      -- As SQLite's version 6: every instance keeps the answers of the group endpoints in memory
      -- (postgres/groups.ts); any change they depend on moves this number in the changing
      -- transaction, so that every instance's next catch-up drops that memory. Statement triggers: one bump
      -- per statement, cascades included (they run their own statements on memberships); TRUNCATE too.
      -- The row lock orders the bumps as their transactions commit.
      CREATE TABLE group_generation (
        id integer PRIMARY KEY CHECK (id = 1),
        value bigint NOT NULL
      );
      INSERT INTO group_generation (id, value) VALUES (1, 0);
      CREATE FUNCTION bump_group_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE group_generation SET value = value + 1;
        RETURN NULL;
      END $$;
      CREATE TRIGGER groups_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON groups
        FOR EACH STATEMENT EXECUTE FUNCTION bump_group_generation();
      CREATE TRIGGER memberships_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON memberships
        FOR EACH STATEMENT EXECUTE FUNCTION bump_group_generation();
      -- Users renamed or deleted (their memberships follow by foreign key; the cache need not rely on it).
      CREATE TRIGGER users_generation AFTER UPDATE OF username OR DELETE OR TRUNCATE ON users
        FOR EACH STATEMENT EXECUTE FUNCTION bump_group_generation();
    `;

/** Version 8: the session deletion log, as SQLite's version 3. */
export const SESSION_DELETION_LOG = `
      -- As SQLite's version 3: every instance keeps sessions in memory (postgres/sessions.ts).
      -- Every deletion of sessions is logged here by a statement trigger, in the deleting transaction,
      -- under the next seq of the head row: its row lock orders the entries as their transactions
      -- commit (a bigserial would not: a reader could see 11 before 10 commits). TRUNCATE moves the
      -- epoch instead: every memory empties itself.
      CREATE TABLE session_log_head (
        id integer PRIMARY KEY CHECK (id = 1),
        seq bigint NOT NULL,
        epoch bigint NOT NULL
      );
      INSERT INTO session_log_head (id, seq, epoch) VALUES (1, 0, 0);
      CREATE TABLE session_deletions (
        seq bigint NOT NULL,
        id_hash bytea NOT NULL,
        at bigint NOT NULL
      );
      CREATE INDEX session_deletions_by_seq ON session_deletions (seq);
      CREATE FUNCTION log_session_deletions() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        next bigint;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM deleted) THEN RETURN NULL; END IF;
        UPDATE session_log_head SET seq = seq + 1 RETURNING seq INTO next;
        INSERT INTO session_deletions (seq, id_hash, at)
          SELECT next, id_hash, (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM deleted;
        RETURN NULL;
      END $$;
      CREATE TRIGGER sessions_log_deletions AFTER DELETE ON sessions REFERENCING OLD TABLE AS deleted
        FOR EACH STATEMENT EXECUTE FUNCTION log_session_deletions();
      CREATE FUNCTION log_sessions_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE session_log_head SET epoch = epoch + 1;
        RETURN NULL;
      END $$;
      CREATE TRIGGER sessions_log_truncate AFTER TRUNCATE ON sessions
        FOR EACH STATEMENT EXECUTE FUNCTION log_sessions_truncated();
    `;

/**
 * Version 9: an update that ends a session early (expires_at moved), or moves it to another user or
 * id, is logged like a deletion (as SQLite's version 9), whoever writes it: an operator's SQL shell
 * included. Memory then reads the session again. The touch of last_seen changes none of these and
 * logs nothing.
 */
export const SESSION_CHANGE_LOG = `
      CREATE FUNCTION log_session_changes() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        next bigint;
      BEGIN
        IF NOT EXISTS (
          SELECT 1 FROM old_rows o LEFT JOIN new_rows n ON n.id_hash = o.id_hash
          WHERE n.id_hash IS NULL OR n.username IS DISTINCT FROM o.username
            OR n.expires_at IS DISTINCT FROM o.expires_at
        ) THEN RETURN NULL; END IF;
        UPDATE session_log_head SET seq = seq + 1 RETURNING seq INTO next;
        INSERT INTO session_deletions (seq, id_hash, at)
          SELECT next, o.id_hash, (extract(epoch FROM clock_timestamp()) * 1000)::bigint
          FROM old_rows o LEFT JOIN new_rows n ON n.id_hash = o.id_hash
          WHERE n.id_hash IS NULL OR n.username IS DISTINCT FROM o.username
            OR n.expires_at IS DISTINCT FROM o.expires_at;
        RETURN NULL;
      END $$;
      CREATE TRIGGER sessions_log_changes AFTER UPDATE ON sessions
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_session_changes();
    `;
