// The group sync's metrics (contract §11: last success time, duration, counts), registered with the
// service's others (metrics.ts). Under WORKERS the primary adds up every worker's series: counters
// sum, and the two gauges take the largest (the latest success, the longest last run), not a sum.
import client from 'prom-client';
import type { GroupSyncOutcome } from '../groups/sync/run.ts';

/** The group sync's view of the metrics: one run's outcome, ended at `at` (ms since the epoch). */
export interface GroupSyncMetrics {
  observeGroupSync(outcome: GroupSyncOutcome, at: number): void;
}

/** Registers the sync's metrics in `registry`. */
export function groupSyncMetrics(registry: client.Registry): GroupSyncMetrics {
  const syncRuns = new client.Counter({
    name: 'clubhouse_group_sync_runs_total',
    help: 'Group sync runs by outcome: success, failure, busy (another run held the lock), or held (it would have removed more groups than GROUP_SYNC_MAX_REMOVALS allows, and wrote nothing).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const syncChanges = new client.Counter({
    name: 'clubhouse_group_sync_changes_total',
    help: 'Rows the group sync wrote, by kind (group, membership, user) and change (added, changed, removed).',
    labelNames: ['kind', 'change'] as const,
    registers: [registry],
  });
  const syncLastSuccess = new client.Gauge({
    name: 'clubhouse_group_sync_last_success_timestamp_seconds',
    help: 'When the last successful group sync ended (Unix time); 0 before the first.',
    aggregator: 'max',
    registers: [registry],
  });
  const syncDuration = new client.Gauge({
    name: 'clubhouse_group_sync_duration_seconds',
    help: 'How long the last group sync run took (directory read, plan and write), whatever its outcome.',
    aggregator: 'max',
    registers: [registry],
  });
  // The alert of GROUP_SYNC_MAX_REMOVALS: above 0 until a run may remove what the directory lost.
  const syncRemovalsHeld = new client.Gauge({
    name: 'clubhouse_group_sync_removals_held',
    help: 'Synced groups the last group sync run would have removed but held back (more than GROUP_SYNC_MAX_REMOVALS allows; nothing written): alert when above 0. 0 after a run that was not held.',
    aggregator: 'max',
    registers: [registry],
  });
  const observeGroupSync = (outcome: GroupSyncOutcome, at: number) => {
    if (!outcome.ok) {
      if (outcome.stage === 'busy') {
        syncRuns.inc({ outcome: 'busy' });
        return;
      }
      syncRuns.inc({ outcome: outcome.stage === 'removals' ? 'held' : 'failure' });
      syncDuration.set(outcome.seconds);
      if (outcome.stage === 'removals') syncRemovalsHeld.set(outcome.plan.counts.groupsRemoved);
      return;
    }
    syncRuns.inc({ outcome: 'success' });
    syncRemovalsHeld.set(0);
    syncDuration.set(outcome.seconds);
    syncLastSuccess.set(at / 1000);
    const c = outcome.plan.counts;
    syncChanges.inc({ kind: 'group', change: 'added' }, c.groupsAdded);
    syncChanges.inc({ kind: 'group', change: 'changed' }, c.groupsChanged);
    syncChanges.inc({ kind: 'group', change: 'removed' }, c.groupsRemoved);
    syncChanges.inc({ kind: 'membership', change: 'added' }, c.membershipsAdded);
    syncChanges.inc({ kind: 'membership', change: 'changed' }, c.membershipsChanged);
    syncChanges.inc({ kind: 'membership', change: 'removed' }, c.membershipsRemoved);
    syncChanges.inc({ kind: 'user', change: 'added' }, c.usersCreated);
  };
  return { observeGroupSync };
}
