// The group sync's metrics (contract §11: last success time, duration, counts), registered with the
// service's others (metrics.ts). Under WORKERS the primary adds up every worker's series: counters
// sum, and the two gauges take the largest (the latest success, the longest last run), not a sum.
import client from 'prom-client';
import type { GroupSyncOutcome } from '../groups/sync-run.ts';

/** The group sync's view of the metrics: one run's outcome, ended at `at` (ms since the epoch). */
export interface GroupSyncMetrics {
  observeGroupSync(outcome: GroupSyncOutcome, at: number): void;
}

/** Registers the sync's metrics in `registry`. */
export function groupSyncMetrics(registry: client.Registry): GroupSyncMetrics {
  const syncRuns = new client.Counter({
    name: 'clubhouse_group_sync_runs_total',
    help: 'Group sync runs by outcome: success, failure, or busy (another run held the lock).',
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
  const observeGroupSync = (outcome: GroupSyncOutcome, at: number) => {
    if (!outcome.ok) {
      syncRuns.inc({ outcome: outcome.stage === 'busy' ? 'busy' : 'failure' });
      if (outcome.stage !== 'busy') syncDuration.set(outcome.seconds);
      return;
    }
    syncRuns.inc({ outcome: 'success' });
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
