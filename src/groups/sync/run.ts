// One run of the group sync (contract §11): take the lease, read the directory, plan against the
// store's state and write, in one transaction, or print what would be written (a dry run). A run
// whose directory and options are the last writing run's, on a store unchanged since, replays that
// run's outcome instead of planning (shortcut.ts). The CLI
// (`clubhouse sync groups`) and the service's interval (schedule.ts) both run this, and contend
// for the same lease, so two runs never overlap, whichever instance or process starts them.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { UsernameCase } from '../../auth/username.ts';
import type { GroupDirectory } from '../../backends/ldap/groups/reader.ts';
import type { GroupSyncState, GroupSyncStore, LeaseHolder } from '../../store/group-sync-types.ts';
import { countsText } from './lines.ts';
import { NoFreeGroupIdError, planGroupSync, type SyncPlan } from './plan.ts';
import { type PreparedDirectory, prepareDirectory } from './prepare.ts';
import { holdMassRemoval, type RemovalLimit, RemovalsHeldError } from './removal-guard.ts';
import { runDigest, syncShortcut } from './shortcut.ts';

/** The lease's name in the store (one row: one sync at a time per database). */
const LEASE_NAME = 'group-sync';

/** A holder that dies keeps others out this long at most; a live one renews well before. */
const LEASE_TTL_MS = 60_000;
const LEASE_RENEW_MS = 20_000;

export interface GroupSyncDeps {
  readonly directory: GroupDirectory;
  readonly store: GroupSyncStore;
  readonly usernameCase: UsernameCase;
}

export interface GroupSyncOptions {
  readonly dryRun: boolean;
  readonly keepRemoved: boolean;
  /** GROUP_SYNC_MAX_REMOVALS: a run that would remove more synced groups writes nothing. */
  readonly maxRemovals: RemovalLimit;
  /** `--allow-removals`: the operator has checked the directory; no bound this run. */
  readonly allowRemovals: boolean;
}

export type GroupSyncOutcome =
  | {
      readonly ok: true;
      readonly plan: SyncPlan;
      readonly dryRun: boolean;
      /** The plan was replayed from the last writing run's mark (shortcut.ts), not planned. */
      readonly replayed: boolean;
      readonly seconds: number;
      readonly phases: SyncPhases;
    }
  | {
      readonly ok: false;
      /**
       * `busy`: another run holds the lease (not a failure of this one); `ids`: too few free group
       * ids for the new groups (contract §11); else where it failed.
       */
      readonly stage: 'busy' | 'directory' | 'store' | 'ids';
      readonly reason: string;
      readonly seconds: number;
    }
  | {
      readonly ok: false;
      /** The plan removes more synced groups than GROUP_SYNC_MAX_REMOVALS allows: held, not written. */
      readonly stage: 'removals';
      readonly reason: string;
      readonly seconds: number;
      /** What the run would have done (printed, so the operator sees which groups). */
      readonly plan: SyncPlan;
      readonly dryRun: boolean;
    };

/** Who this process is, in the lease row (for an operator reading it, and unique per run). */
function holderName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
}

/**
 * Where a successful run's time went, in seconds: reading the directory; making records of its
 * answers and preparing them; planning; and the store (the lease, the transaction), planning and
 * records excluded. What a run is bound by, for an operator and the bench.
 */
interface SyncPhases {
  readonly directory: number;
  readonly records: number;
  readonly plan: number;
  readonly store: number;
}

const since = (start: number) => (performance.now() - start) / 1000;

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The directory's answers cannot be made into records (an entry outside its base, a malformed one). */
class DirectoryRefused extends Error {}

/**
 * One sync run; never throws for the directory or the store: a failure anywhere is an outcome, and
 * changes nothing (the write is one transaction, after the whole directory was read).
 */
export async function runGroupSync(
  deps: GroupSyncDeps,
  options: GroupSyncOptions,
): Promise<GroupSyncOutcome> {
  const started = performance.now();
  const seconds = () => since(started);
  const phases = { directory: 0, records: 0, plan: 0, store: 0 };
  // A dry run writes nothing, so it needs no lease: it never waits for, nor holds up, a real run.
  const lease: LeaseHolder | null = options.dryRun ? null : { name: LEASE_NAME, holder: holderName() };
  if (lease !== null) {
    let taken: boolean;
    try {
      const start = performance.now();
      taken = await deps.store.takeLease(lease, LEASE_TTL_MS);
      phases.store += since(start);
    } catch (err) {
      return {
        ok: false,
        stage: 'store',
        reason: `cannot take the sync lock: ${messageOf(err)}`,
        seconds: seconds(),
      };
    }
    if (!taken) {
      const held = await deps.store.leaseHolder(LEASE_NAME).catch(() => null);
      const by =
        held === null ? '' : ` (${held.holder}, for ${Math.ceil(held.remainingMs / 1000)} s more at most)`;
      return { ok: false, stage: 'busy', reason: `another group sync is running${by}`, seconds: seconds() };
    }
  }
  // Renewed while the directory is read; if a renewal is lost, the write's own check refuses.
  const renewal =
    lease === null
      ? null
      : setInterval(() => {
          deps.store.renewLease(lease, LEASE_TTL_MS).catch(() => undefined);
        }, LEASE_RENEW_MS);
  renewal?.unref();
  try {
    let start = performance.now();
    const read = await deps.directory.read();
    phases.directory = since(start);
    if (!read.ok)
      return { ok: false, stage: 'directory', reason: `${read.failure}: ${read.reason}`, seconds: seconds() };
    // The records are made, and prepared, only for a run that plans: before the store's
    // transaction, unless the last writing run's mark answers this one (asked again inside it).
    let prepared: PreparedDirectory | undefined;
    const prepare = () => {
      if (prepared !== undefined) return prepared;
      const start = performance.now();
      const records = read.records();
      if (!records.ok) throw new DirectoryRefused(`${records.failure}: ${records.reason}`);
      prepared = prepareDirectory(records.groups, records.skipped, records.people, deps.usernameCase);
      phases.records += since(start);
      return prepared;
    };
    const planned = (state: GroupSyncState) => {
      const directory = prepare();
      const start = performance.now();
      const plan = planGroupSync(directory, state, { keepRemoved: options.keepRemoved });
      phases.plan += since(start);
      // Inside the transaction: a held plan rolls it back, so nothing at all is written.
      if (!options.allowRemovals) holdMassRemoval(plan, state.synced.length, options.maxRemovals);
      return plan;
    };
    const digest = runDigest(read.digest, {
      usernameCase: deps.usernameCase,
      keepRemoved: options.keepRemoved,
    });
    let replayed = false;
    let plan: SyncPlan;
    try {
      start = performance.now();
      const before = phases.records + phases.plan;
      if (!(await deps.store.replayable(digest))) prepare();
      plan = await deps.store.apply(() => prepare().usernames, planned, {
        write: !options.dryRun,
        lease,
        shortcut: syncShortcut(digest, () => {
          replayed = true;
        }),
      });
      phases.store += since(start) - (phases.records + phases.plan - before);
    } catch (err) {
      if (err instanceof RemovalsHeldError)
        return {
          ok: false,
          stage: 'removals',
          reason: err.message,
          seconds: seconds(),
          plan: err.plan,
          dryRun: options.dryRun,
        };
      const stage =
        err instanceof DirectoryRefused ? 'directory' : err instanceof NoFreeGroupIdError ? 'ids' : 'store';
      return { ok: false, stage, reason: messageOf(err), seconds: seconds() };
    }
    return { ok: true, plan, dryRun: options.dryRun, replayed, seconds: seconds(), phases };
  } finally {
    if (renewal !== null) clearInterval(renewal);
    if (lease !== null) await deps.store.releaseLease(lease).catch(() => undefined);
  }
}

/** How a run's outcome is logged, by the CLI and the service alike: one line with the counts or the reason. */
export function syncOutcomeLog(
  outcome: GroupSyncOutcome,
  by: 'cli' | 'interval',
): { level: 'info' | 'warn' | 'error'; fields: Record<string, unknown>; message: string } {
  if (outcome.ok) {
    return {
      level: 'info',
      fields: {
        groupSync: {
          by,
          dryRun: outcome.dryRun,
          replayed: outcome.replayed,
          seconds: outcome.seconds,
          phases: outcome.phases,
          ...outcome.plan.counts,
        },
      },
      message: `group sync ${outcome.dryRun ? 'dry run ' : ''}done: ${countsText(outcome.plan.counts)}`,
    };
  }
  if (outcome.stage === 'removals') {
    // Written nothing, on purpose: an alert for the operator (and clubhouse_group_sync_removals_held).
    return {
      level: 'error',
      fields: {
        groupSync: {
          by,
          stage: outcome.stage,
          dryRun: outcome.dryRun,
          reason: outcome.reason,
          seconds: outcome.seconds,
          ...outcome.plan.counts,
        },
      },
      message: `group sync held: ${outcome.reason}`,
    };
  }
  // Another instance's run is not this one's failure: worth a line, not an alert.
  return {
    level: outcome.stage === 'busy' && by === 'interval' ? 'info' : 'error',
    fields: { groupSync: { by, stage: outcome.stage, reason: outcome.reason, seconds: outcome.seconds } },
    message: `group sync ${outcome.stage === 'busy' ? 'not run' : 'failed'}: ${outcome.reason}`,
  };
}
