// The PostgreSQL migrations behind the answers from memory (schema.ts lists them in order; the design
// is docs/freshness.md): what moves in the writing transaction, so that every instance's next
// catch-up sees it.
import { GROUP_LOG } from '../freshness/group-log.ts';

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

/**
 * The groups' statement trigger function: logs the ids its statement touched (`updated`: how an
 * UPDATE's are found) and the users with memberships under an id that appeared.
 */
const logGroupsChanged = (create: 'CREATE' | 'CREATE OR REPLACE', updated: string) => `
      ${create} FUNCTION log_groups_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        ids integer[];
        appeared integer[];
      BEGIN
        IF TG_OP = 'INSERT' THEN
          ids := ARRAY(SELECT id FROM new_rows);
          appeared := ids;
        ELSIF TG_OP = 'DELETE' THEN
          ids := ARRAY(SELECT id FROM old_rows);
          appeared := '{}';
        ELSE
          ${updated}
          appeared := ARRAY(SELECT id FROM new_rows EXCEPT SELECT id FROM old_rows);
        END IF;
        IF cardinality(ids) > 0 THEN
          PERFORM log_group_changes(
            ARRAY(SELECT DISTINCT username FROM memberships WHERE group_id = ANY (appeared)), ids);
        END IF;
        RETURN NULL;
      END $$;`;

/**
 * Version 13: the group change log, as SQLite's version 13 (freshness/group-log.ts says what each
 * entry names and why). Statement triggers read what their statement touched from its transition
 * tables (cascades run statements of their own, which log themselves) and log it under one new
 * generation; a statement that touched nothing moves nothing, so every generation has an entry. A
 * TRUNCATE, or a statement touching more than a catch-up reads at once, logs "everything" (both
 * NULL). The row lock of group_generation orders the generations, and their entries, as the
 * transactions commit.
 */
export const GROUP_CHANGE_LOG = `
      CREATE TABLE group_changes (
        generation bigint NOT NULL,
        username text,
        group_id integer,
        at bigint NOT NULL
      );
      CREATE INDEX group_changes_by_generation ON group_changes (generation);
      -- Moves the generation and logs the users and groups named (both NULL: everything); keeps the
      -- last ${GROUP_LOG.keptGenerations} generations (a lagging reader finds its next one gone and
      -- drops everything), pruned every ${GROUP_LOG.pruneEvery}th.
      CREATE FUNCTION log_group_changes(usernames text[], group_ids integer[]) RETURNS void
        LANGUAGE plpgsql AS $$
      DECLARE
        next bigint;
        now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
      BEGIN
        UPDATE group_generation SET value = value + 1 RETURNING value INTO next;
        IF usernames IS NULL OR group_ids IS NULL
          OR cardinality(usernames) + cardinality(group_ids) > ${GROUP_LOG.pageRows} THEN
          INSERT INTO group_changes (generation, username, group_id, at) VALUES (next, NULL, NULL, now_ms);
        ELSE
          INSERT INTO group_changes (generation, username, group_id, at)
            SELECT next, u, NULL, now_ms FROM unnest(usernames) u
            UNION ALL SELECT next, NULL, g, now_ms FROM unnest(group_ids) g;
        END IF;
        IF next % ${GROUP_LOG.pruneEvery} = 0 THEN
          DELETE FROM group_changes WHERE generation <= next - ${GROUP_LOG.keptGenerations};
        END IF;
      END $$;

      CREATE FUNCTION log_memberships_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        names text[];
      BEGIN
        IF TG_OP = 'INSERT' THEN names := ARRAY(SELECT DISTINCT username FROM new_rows);
        ELSIF TG_OP = 'DELETE' THEN names := ARRAY(SELECT DISTINCT username FROM old_rows);
        ELSE names := ARRAY(SELECT username FROM old_rows UNION SELECT username FROM new_rows);
        END IF;
        IF cardinality(names) > 0 THEN PERFORM log_group_changes(names, '{}'); END IF;
        RETURN NULL;
      END $$;

      -- A group that appears under an id (inserted, or an id changed) also names the users with
      -- memberships there: with foreign keys they have none, but the cost is one index probe.
${logGroupsChanged('CREATE', 'ids := ARRAY(SELECT id FROM old_rows UNION SELECT id FROM new_rows);')}

      CREATE FUNCTION log_users_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM old_rows) THEN
          PERFORM log_group_changes(ARRAY(SELECT username FROM old_rows), '{}');
        END IF;
        RETURN NULL;
      END $$;

      -- A row trigger: transition tables cannot go with a column list, and a statement trigger on
      -- every UPDATE of users would run on every login.
      CREATE FUNCTION log_user_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM log_group_changes(ARRAY[OLD.username, NEW.username], '{}');
        RETURN NULL;
      END $$;

      CREATE FUNCTION log_group_tables_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM log_group_changes(NULL, NULL);
        RETURN NULL;
      END $$;

      DROP TRIGGER groups_generation ON groups;
      DROP TRIGGER memberships_generation ON memberships;
      DROP TRIGGER users_generation ON users;
      DROP FUNCTION bump_group_generation();

      CREATE TRIGGER groups_log_insert AFTER INSERT ON groups REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_groups_changed();
      CREATE TRIGGER groups_log_update AFTER UPDATE ON groups
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_groups_changed();
      CREATE TRIGGER groups_log_delete AFTER DELETE ON groups REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_groups_changed();
      CREATE TRIGGER memberships_log_insert AFTER INSERT ON memberships REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_memberships_changed();
      CREATE TRIGGER memberships_log_update AFTER UPDATE ON memberships
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_memberships_changed();
      CREATE TRIGGER memberships_log_delete AFTER DELETE ON memberships REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_memberships_changed();
      CREATE TRIGGER users_log_delete AFTER DELETE ON users REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION log_users_deleted();
      CREATE TRIGGER users_log_rename AFTER UPDATE OF username ON users FOR EACH ROW
        WHEN (OLD.username IS DISTINCT FROM NEW.username) EXECUTE FUNCTION log_user_renamed();
      CREATE TRIGGER groups_log_truncate AFTER TRUNCATE ON groups
        FOR EACH STATEMENT EXECUTE FUNCTION log_group_tables_truncated();
      CREATE TRIGGER memberships_log_truncate AFTER TRUNCATE ON memberships
        FOR EACH STATEMENT EXECUTE FUNCTION log_group_tables_truncated();
      CREATE TRIGGER users_log_truncate AFTER TRUNCATE ON users
        FOR EACH STATEMENT EXECUTE FUNCTION log_group_tables_truncated();
    `;

/**
 * Version 14 (as SQLite's): an update of groups logs, and moves the generation for, only the rows
 * whose answer columns (GROUP_COLUMNS) or external_id (the group sync reads it) changed, and the ids
 * that went or appeared. The search's fill writes search_text alone: each such write dropped the
 * group's answers from every process's memory, all of them at the first search after a bulk import.
 * A statement trigger with transition tables cannot take a column list, so the rows are compared.
 */
export const GROUP_ANSWER_COLUMNS = logGroupsChanged(
  'CREATE OR REPLACE',
  `ids := ARRAY(
            (SELECT id FROM old_rows EXCEPT SELECT id FROM new_rows)
            UNION (SELECT id FROM new_rows EXCEPT SELECT id FROM old_rows)
            UNION (SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
              WHERE (o.name, o.description, o.short_description, o.activities, o.type, o.external_id)
                IS DISTINCT FROM (n.name, n.description, n.short_description, n.activities, n.type, n.external_id)));`,
);
