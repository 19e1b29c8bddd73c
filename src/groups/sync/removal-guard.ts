// GROUP_SYNC_MAX_REMOVALS: how many synced groups one run may remove. A filter that suddenly matches
// nothing, an ACL that hides the groups from the service account, or a group base moved in the
// directory all look, to the sync, like every group gone; without a bound, one run would remove
// every synced group with its memberships, and the groups coming back later take new ids (pending
// requests, links and bookmarks lost). Memberships are not bounded: the next good run restores
// every one the directory names, under the same group ids.
import type { SyncPlan } from './plan.ts';

/**
 * At most this many groups, or this share (in percent) of the synced groups, rounded up (the
 * setting's default, 10%, is at least one group as soon as any is synced).
 */
export type RemovalLimit = { readonly groups: number } | { readonly percent: number };

/** How many of `synced` groups one run may remove under `limit`. */
function removalAllowance(limit: RemovalLimit, synced: number): number {
  return 'groups' in limit ? limit.groups : Math.ceil((synced * limit.percent) / 100);
}

/** The setting's text for `limit` (`25`, `10%`), as an operator writes it. */
export const removalLimitText = (limit: RemovalLimit): string =>
  'groups' in limit ? String(limit.groups) : `${limit.percent}%`;

/** A run that would remove more synced groups than allowed: held back, nothing written. */
export class RemovalsHeldError extends Error {
  override readonly name = 'RemovalsHeldError';
  readonly plan: SyncPlan;
  readonly allowed: number;
  constructor(plan: SyncPlan, allowed: number, synced: number, limit: RemovalLimit) {
    const removing = plan.removed.length;
    super(
      `this run would remove ${removing} of the ${synced} synced groups, more than GROUP_SYNC_MAX_REMOVALS (${removalLimitText(limit)}: ${allowed}) allows; nothing written. If the directory is right, run clubhouse sync groups --allow-removals`,
    );
    this.plan = plan;
    this.allowed = allowed;
  }
}

/** Throws RemovalsHeldError when `plan` removes more of `synced` groups than `limit` allows. */
export function holdMassRemoval(plan: SyncPlan, synced: number, limit: RemovalLimit): void {
  const allowed = removalAllowance(limit, synced);
  if (plan.removed.length > allowed) throw new RemovalsHeldError(plan, allowed, synced, limit);
}
