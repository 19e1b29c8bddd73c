// How SQLite's memories catch up (freshness/gate.ts): synchronously. One read of the WAL-index header
// (commit-watch.ts) says whether anything was committed to the file since each memory last caught
// up, by any connection, this one included; only when it moved does that memory run its exact check
// (sessions.ts: PRAGMA data_version, then the deletion log; groups.ts: the generation). A request's
// catch-up reads the header after the request's bytes were read from its socket, so it sees every
// commit that returned before the request arrived, and the answer is given in the same turn.
import type { CatchUpSource } from '../freshness/gate.ts';
import type { Memory } from '../types.ts';
import type { CommitWatch } from './commit-watch.ts';

/** The catch-up of `parts` (each memory's exact check), run only for the memories the watch says moved. */
export function sqliteCatchUp(
  watch: CommitWatch,
  parts: Readonly<Partial<Record<Memory, () => void>>>,
): CatchUpSource {
  /** The watch's epoch when each memory last caught up (NaN: never). */
  const caughtUpAt: Record<Memory, number> = { sessions: Number.NaN, groups: Number.NaN };
  return {
    now: (memories) => {
      const epoch = watch.epoch();
      for (const memory of memories) {
        if (caughtUpAt[memory] === epoch) continue;
        parts[memory]?.();
        caughtUpAt[memory] = epoch;
      }
    },
  };
}
