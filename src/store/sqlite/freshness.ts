// How SQLite's memories catch up (freshness/gate.ts): synchronously, once per turn of the event
// loop for every request read in it. One read of the WAL-index header (commit-watch.ts) says whether
// anything was committed to the file since each memory last caught up, by any connection, this one
// included; only when it moved does that memory run its exact check (sessions.ts: PRAGMA
// data_version, then the deletion log; groups.ts: the generation). The catch-up runs in the turn's
// check phase, after node read every request of the turn from its socket, so it sees every commit
// that returned before any of them arrived; the answers follow in the same phase.
import type { Memory } from '../types.ts';
import type { CommitWatch } from './commit-watch.ts';

/**
 * The catch-up of `parts` (each memory's exact check), run only for the memories the watch says
 * moved; throws when a check fails (SQLITE_BUSY), and the next catch-up tries again.
 */
export function sqliteCatchUp(
  watch: CommitWatch,
  parts: Readonly<Partial<Record<Memory, () => void>>>,
): (memories: readonly Memory[]) => void {
  /** The watch's epoch when each memory last caught up (NaN: never). */
  const caughtUpAt: Record<Memory, number> = { sessions: Number.NaN, groups: Number.NaN };
  return (memories) => {
    const epoch = watch.epoch();
    for (const memory of memories) {
      if (caughtUpAt[memory] === epoch) continue;
      parts[memory]?.();
      caughtUpAt[memory] = epoch;
    }
  };
}
