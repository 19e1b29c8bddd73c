// The group sync's shortcut (contract §11): the plan depends on the directory's answers, the options
// and the store's state, and on nothing else. A writing run records, with a digest of the first two,
// the plan it then finds against the state it wrote (when that plan writes nothing); a later run
// with the same digest, on a store nothing has written since, replays it instead of making records
// of the answers, reading every synced group and membership and planning again. The reader digests
// its answers (backends/ldap/groups/reader.ts); when the store may say "nothing written since" is the
// store's to judge (store/sql/group-sync-mark.ts).
import { createHash } from 'node:crypto';
import type { UsernameCase } from '../../auth/username.ts';
import type { DirectorySkip } from '../../backends/ldap/groups/records.ts';
import type { SyncedGroup, SyncShortcut } from '../../store/group-sync-types.ts';
import { changesNothing, type SyncPlan, unchangedPlan } from './plan.ts';

/**
 * The version of the rules (plan.ts, prepare.ts, names.ts, groups/import-fields.ts, the username
 * profile): bump it when they change, so that no digest made under the old rules matches.
 */
const SYNC_RULES = 3;

/** Everything the plan depends on besides the store's state, as one digest: the answers' and ours. */
export function runDigest(
  answers: string,
  options: { readonly usernameCase: UsernameCase; readonly keepRemoved: boolean },
): string {
  return createHash('sha256')
    .update(JSON.stringify([SYNC_RULES, options.usernameCase, options.keepRemoved, answers]))
    .digest('hex');
}

/** What a no-change plan needs to be told again: the groups kept, and the skips. */
interface Recorded {
  readonly kept: readonly SyncedGroup[];
  readonly skipped: readonly DirectorySkip[];
}

/** The shortcut for a run whose inputs have `digest`; `replayed` hears when it is taken. */
export function syncShortcut(digest: string, replayed: () => void): SyncShortcut<SyncPlan> {
  return {
    digest,
    record: (plan) =>
      changesNothing(plan)
        ? JSON.stringify({ kept: plan.kept, skipped: plan.skipped } satisfies Recorded)
        : null,
    replay(recorded) {
      replayed();
      const { kept, skipped } = JSON.parse(recorded) as Recorded;
      return unchangedPlan(kept, skipped);
    },
  };
}
