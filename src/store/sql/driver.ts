// The tiny driver under the shared SQL layer (users.ts, groups.ts, import-data.ts, usernames.ts,
// sessions.ts, throttle.ts, migrate.ts).
//
// The layer writes each operation once, as a generator of statements: it yields a statement,
// receives its rows, and returns the answer. A driver runs those steps: SQLite's synchronously,
// inside one synchronous transaction (no await can let another request's statement slip into it,
// and the request path pays no extra await); PostgreSQL's awaiting each statement, on the pool or
// on one transaction's connection. What still differs between the engines is the Dialect below.

/** A row as the engine returns it; rows.ts turns rows into the types of store/types.ts. */
export type Row = Record<string, unknown>;

export interface Statement {
  /** The SQL, with PostgreSQL placeholders ($1, $2, …); the SQLite driver rewrites them. */
  readonly sql: string;
  readonly params: readonly unknown[];
  /** PostgreSQL prepares a named statement once per connection (the request path). */
  readonly name?: string;
  /** Several statements without parameters (a migration): SQLite must exec them, not prepare. */
  readonly script?: boolean;
}

export interface Result {
  readonly rows: Row[];
  /** Rows inserted, updated or deleted. */
  readonly changes: number;
}

/** An operation of the shared layer: yields statements, receives their results, returns T. */
export type Steps<T> = Generator<Statement, T, Result>;

/**
 * How `run` wraps the steps: one statement at a time (undefined), one write transaction (taking the
 * write lock up front on SQLite), a read-only snapshot, or a write transaction allowed to run long
 * (an import of a big file).
 */
export type Mode = 'write' | 'snapshot' | 'bulk';

/** A column of a bulk parameter: its name and PostgreSQL array element type. */
export type Column = readonly [
  name: string,
  type: 'integer' | 'smallint' | 'bigint' | 'text' | 'boolean' | 'bytea',
];

/** What differs between the SQL the layer writes for SQLite and for PostgreSQL. */
export interface Dialect {
  /**
   * A FROM item `f` over many rows passed as parameters from `$first` on, with the columns named
   * and `ord`, the row's 1-based position: PostgreSQL unnests arrays, SQLite walks one JSON text.
   * Its parameters (from `bulk`) must be the last of the statement.
   */
  rows(first: number, columns: readonly Column[]): string;
  /** The parameters of `rows`: one array per column, or one JSON text. */
  bulk(columns: readonly Column[], rows: readonly (readonly unknown[])[]): unknown[];
  /** ORDER BY suffix for code-point order of text whatever the locale (SQLite's BINARY is). */
  readonly binaryOrder: string;
  /** An expression yielding random text (parks group names during an import). */
  readonly randomText: string;
  /** Suffix of a SELECT that keeps the row from being deleted until the transaction ends. */
  readonly keyShare: string;
  /** Suffix of a SELECT that keeps other writers off its rows until the transaction ends. */
  readonly forUpdate: string;
  /** A LIMIT that keeps every row, for an OFFSET alone (SQLite's grammar wants a LIMIT first). */
  readonly limitAll: string;
  /** The function answering the largest of its arguments. */
  readonly greatest: string;
  /**
   * The database's clock in ms since the epoch, as an expression: a lease (sql/lease.ts) is timed by
   * the one clock every instance shares, not by each instance's own.
   */
  readonly nowMs: string;
  /**
   * A statement locking the text $1 until the transaction ends, so that two transactions about the
   * same text run one after the other; null when the transaction's write lock does it.
   */
  readonly lockText: string | null;
  /** A text parameter as the engine can store it (PostgreSQL's text cannot hold U+0000). */
  storedText(value: string): string;
  /** Makes writers of `groups` queue behind this transaction; null when the write lock does it. */
  readonly lockGroups: string | null;
  /** The same for `users` (and for another process renaming them: it conflicts with itself). */
  readonly lockUsers: string | null;
  /**
   * A query answering one row, `value`: a number that every write of a group or membership (and
   * every rename or deletion of a user) moves, in the writing transaction; null when the engine has
   * none (the group sync then plans every run in full: sql/group-sync-mark.ts).
   */
  readonly groupGeneration: string | null;
  /**
   * A query answering one row: `log_epoch` (text) and `log_seq`, the session deletion log's position
   * (freshness/change-log.ts), to be read in the same snapshot as the sessions it vouches for.
   */
  readonly sessionLogPosition: string;
  /**
   * The group search's trigram index (sql/group-search.ts): a SELECT of the `id` of every group whose
   * search text holds all the trigrams given as parameter $n, the same as a condition on `g`
   * (groups), and that parameter made from the trigrams.
   */
  readonly trigramIndex: {
    ids(param: number): string;
    holds(param: number): string;
    value(trigrams: readonly string[]): unknown;
    /**
     * The statement by which the fill writes the trigrams of the groups it folded, from two bulk
     * parameters (`group_id`, and `trigrams`: a text, one trigram a line), for an engine whose index
     * is over trigrams written beside the text; null for one that cuts the stored text itself.
     */
    readonly fill: string | null;
  };
  /** DDL of the table recording applied migrations. */
  readonly migrationsTable: string;
  /** True for a violation of a UNIQUE or PRIMARY KEY constraint (not a CHECK: that is a bug). */
  isUniqueViolation(err: unknown): boolean;
}

export interface SqlDriver {
  readonly dialect: Dialect;
  /** Runs the steps (in a transaction when `mode` says so); store failures are mapped as usual. */
  run<T>(steps: Steps<T>, mode?: Mode): Promise<T>;
}

/** Feeds each statement's result back into `steps`, synchronously; errors are thrown into it. */
export function stepSync<T>(steps: Steps<T>, exec: (statement: Statement) => Result): T {
  let next = steps.next();
  while (next.done !== true) {
    let result: Result;
    try {
      result = exec(next.value);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(result);
  }
  return next.value;
}

/** stepSync for a driver whose statements answer later. */
export async function stepAsync<T>(
  steps: Steps<T>,
  exec: (statement: Statement) => Promise<Result>,
): Promise<T> {
  let next = steps.next();
  while (next.done !== true) {
    let result: Result;
    try {
      result = await exec(next.value);
    } catch (err) {
      next = steps.throw(err);
      continue;
    }
    next = steps.next(result);
  }
  return next.value;
}

/** The steps of one statement whose rows `map` turns into the answer. */
export function* select<T>(statement: Statement, map: (rows: Row[]) => T): Steps<T> {
  return map((yield statement).rows);
}

/** The steps of one statement answering how many rows it changed. */
export function* change(statement: Statement): Steps<number> {
  return (yield statement).changes;
}
