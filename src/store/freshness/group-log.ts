// The group change log as the group memory reads it, on every engine (docs/freshness.md). The
// triggers of migration 13 (sqlite/schema.ts, postgres/freshness-schema.ts) move group_generation in
// every transaction that changes what a group answer depends on, whoever commits it, and log under
// the generation they moved to what the change touched:
// - a membership inserted, changed or deleted: its user (before and after), whose memberships and
//   list are read again;
// - a group inserted, changed or deleted: the group (before and after), whose JSON and every list
//   holding it are read again; a group appearing under an id also names the users with memberships
//   there (left by a deletion with foreign keys off, they were not in those users' answers);
// - a user renamed or deleted: the user (before and after; the answers read memberships by name);
// - a TRUNCATE, or a statement touching more than a page holds: everything.
// Every generation has at least one entry, so a page that holds every generation after the reader's
// position, in order, is complete (change-log.ts drops everything otherwise). The log keeps the
// last `keptGenerations` generations: a reader further behind finds the entry after its position
// gone, and empties its memory.
import type { LogPage } from './change-log.ts';

/** One entry: the generation it moved to, and the user or the group whose answers changed (neither: everything). */
export interface GroupChange {
  readonly generation: number;
  readonly username: string | null;
  readonly group: number | null;
}

export const GROUP_LOG = {
  /** The most rows a catch-up reads; more after its position, and it drops everything. */
  pageRows: 1000,
  /** Generations kept: the triggers prune the older ones, every `pruneEvery` generations. */
  keptGenerations: 10_000,
  pruneEvery: 64,
} as const;

/** The log's head and marks as read in one snapshot with the rows after the reader's position. */
export interface GroupLogHead {
  /** group_generation now. */
  readonly generation: number;
  /** The oldest generation the log keeps; null when it keeps none. */
  readonly first: number | null;
  /** The marks (the least `at` of a generation's rows) at the reader's position and at `generation`. */
  readonly markAt: string | null;
  readonly lastMark: string | null;
}

/**
 * The page after `after` (-1: none read yet) from the head and the rows read after it (generation
 * ascending, at most GROUP_LOG.pageRows + 1): holed when cut, or when a generation is missing.
 */
export function groupLogPage(
  after: number,
  head: GroupLogHead,
  rows: readonly GroupChange[],
): LogPage<GroupChange> {
  let expected = after + 1;
  let holed = rows.length > GROUP_LOG.pageRows;
  for (const row of rows) {
    if (holed) break;
    if (row.generation === expected) expected++;
    else if (row.generation !== expected - 1) holed = true;
  }
  if (after >= 0 && head.generation > after && expected !== head.generation + 1) holed = true;
  return {
    epoch: '',
    seq: head.generation,
    first: head.first,
    markAtPosition: head.markAt,
    lastMark: head.lastMark,
    entries: after < 0 ? [] : rows,
    holed,
    after,
  };
}
