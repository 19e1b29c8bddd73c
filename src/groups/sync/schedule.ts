// GROUP_SYNC_INTERVAL (contract §11): the sync inside the service, off the request path. Each
// process runs it at start and then every interval after the previous run ended (never two at once
// here); the store's lease (run.ts) keeps instances and WORKERS to one run at a time, and the
// others' attempts end as `busy`. Stopping waits for a run in progress, whose transaction is the
// store's to finish or roll back.
import type { RemovalLimit } from './removal-guard.ts';
import { type GroupSyncDeps, type GroupSyncOutcome, runGroupSync } from './run.ts';

export interface GroupSyncSchedule {
  /** No run starts after this; resolves once the one in progress (if any) has ended. */
  stop(): Promise<void>;
}

/**
 * One run as the interval runs it: written, never a dry run, and GROUP_SYNC_MAX_REMOVALS never
 * lifted (a held run logs and alerts; an operator decides, with `clubhouse sync groups`).
 */
export function intervalRun(deps: GroupSyncDeps, maxRemovals: RemovalLimit): () => Promise<GroupSyncOutcome> {
  return () => runGroupSync(deps, { dryRun: false, keepRemoved: false, maxRemovals, allowRemovals: false });
}

/** Runs `run` now and then every `intervalMs`; `report` hears every outcome. */
export function scheduleGroupSync(
  run: () => Promise<GroupSyncOutcome>,
  intervalMs: number,
  report: (outcome: GroupSyncOutcome) => void,
  firstDelayMs = 0,
): GroupSyncSchedule {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const next = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = run()
        .then(report, (err: unknown) =>
          report({
            ok: false,
            stage: 'store',
            reason: err instanceof Error ? err.message : String(err),
            seconds: 0,
          }),
        )
        .finally(() => next(intervalMs));
    }, delay);
    // The interval alone never keeps the process alive (a stopping server must exit).
    timer.unref();
  };
  next(firstDelayMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
