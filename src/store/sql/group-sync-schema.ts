// The migration of the group sync (contract §11), written once for both engines (SQLite's version 7,
// PostgreSQL's version 5); only the column types and SQLite's STRICT differ.

/** The engine's words for the migration's types. */
interface SchemaWords {
  readonly text: string;
  readonly bigint: string;
  /** Table options after the closing parenthesis (SQLite: `STRICT`). */
  readonly tableOptions: string;
}

/** The SQL of the migration in `words`. */
export function groupSyncMigration(words: SchemaWords): string {
  const { text, bigint, tableOptions } = words;
  return `
    -- contract §11: a synced group is known by its directory identity (entryUUID, objectGUID), so a
    -- rename or a move keeps its id and memberships; NULL for a group created in clubhouse (CLI,
    -- import), which the sync never touches. A unique index, not a UNIQUE column: SQLite cannot add
    -- one, and NULLs never collide in either engine.
    ALTER TABLE groups ADD COLUMN external_id ${text}
      CHECK (external_id IS NULL OR length(external_id) BETWEEN 1 AND 200);
    CREATE UNIQUE INDEX groups_by_external_id ON groups (external_id);

    -- One row per job that runs on one instance at a time (the group sync): who holds it and until
    -- when, by the database's clock. Taken and renewed by single atomic statements (sql/lease.ts).
    CREATE TABLE sync_leases (
      name ${text} PRIMARY KEY,
      holder ${text} NOT NULL,
      expires_at ${bigint} NOT NULL
    )${tableOptions};
  `;
}
