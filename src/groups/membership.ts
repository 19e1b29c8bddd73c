// Joining and running a group (contract §13): the one place that decides what a membership may
// become. Pure: the store reads the facts in the transaction that then writes the answer
// (store/sql/memberships.ts), so two administrators acting at once each decide on what the other
// committed. The routes and the command line (cli/group-commands.ts) ask the same rules.
//
// Transitions: none → 0 (ask); 0 → 1 (approve); 0 → none (refuse, withdraw); 1 ↔ 2 (by an
// administrator); 1 or 2 → none (leave, remove). Nothing else. A group keeps an administrator once
// it has one (the command line may remove the last with --force); the members and administrators of
// a group synced from the directory follow the directory (contract §11).
import type { MemberStatus, MembershipFacts, StoredMemberStatus } from '../store/group-types.ts';

/** Who acts: the person themselves, an administrator of the group, or the operator (the command line). */
export type MembershipActor = 'self' | 'administrator' | 'operator';

/** What is asked of a membership. */
export type MembershipAction =
  /** POST /api/group/{id}/membership: ask to join. */
  | { readonly kind: 'ask' }
  /** DELETE /api/group/{id}/membership, DELETE …/members/{username}, `member remove`. */
  | { readonly kind: 'remove' }
  /** PUT …/members/{username} (1 or 2), `member set` (0, 1 or 2). */
  | { readonly kind: 'set'; readonly status: StoredMemberStatus };

/** Why a change is refused; the routes and the command line word each one (http/api-errors.ts). */
export type MembershipRefusal =
  /** Not an administrator of the group. */
  | 'not-administrator'
  /** The target is not a member of the group (or never signed in): nothing to change there. */
  | 'not-member'
  /** It would leave a group that has an administrator without one. */
  | 'last-administrator'
  /** The directory decides this group's members and administrators. */
  | 'directory-managed'
  /** Only a member can be made an administrator: a request is approved first. */
  | 'not-a-transition';

/** The answer: the status the membership ends with (−1: none), or a refusal. */
export type MembershipDecision =
  | { readonly ok: true; readonly to: MemberStatus }
  | { readonly ok: false; readonly refusal: MembershipRefusal };

/**
 * How a change holds the group while it decides: an ask only ever adds a request where there was no
 * membership, which no other decision depends on (not the administrators' count, not anyone else's
 * status), so a crowd asking to join one group at once need not queue one by one; every other change
 * decides on the group's administrators and waits for all others.
 */
export function membershipLock(action: MembershipAction): 'exclusive' | 'shared' {
  return action.kind === 'ask' ? 'shared' : 'exclusive';
}

/** contract §13: a group's administrators are the users with status 2 in it. */
export const isAdministrator = (status: MemberStatus): boolean => status === 2;

const allow = (to: MemberStatus): MembershipDecision => ({ ok: true, to });
const refuse = (refusal: MembershipRefusal): MembershipDecision => ({ ok: false, refusal });

/**
 * What `action` by `actor` makes of the membership described by `facts`. An answer equal to the
 * target's status writes nothing (the same request twice is answered the same). `force` lets the
 * operator remove or demote the last administrator, and nothing else.
 */
export function decideMembership(
  actor: MembershipActor,
  action: MembershipAction,
  facts: MembershipFacts,
  force = false,
): MembershipDecision {
  const from = facts.targetStatus;
  if (actor === 'administrator') {
    if (!isAdministrator(facts.actorStatus)) return refuse('not-administrator');
    // contract §13: a username that never signed in cannot be added.
    if (!facts.targetKnown) return refuse('not-member');
  }
  const to: MemberStatus =
    action.kind === 'ask' ? (from === -1 ? 0 : from) : action.kind === 'remove' ? -1 : action.status;
  if (to === from) return allow(to);
  // A person asks (none → 0), withdraws (0 → none) or leaves (1, 2 → none); nothing else.
  if (actor === 'self' && action.kind === 'set') return refuse('not-administrator');
  if (actor === 'administrator') {
    // An administrator approves a request, never adds someone who did not ask; and a request is
    // approved (0 → 1) before its author can be made an administrator (1 → 2).
    if (from === -1) return refuse('not-member');
    if (to === 0 || (from === 0 && to === 2)) return refuse('not-a-transition');
  }
  // A request (0) is clubhouse's own record, even in a synced group; members and administrators
  // are the directory's.
  if (facts.directoryManaged && (from === 1 || from === 2 || to === 1 || to === 2)) {
    return refuse('directory-managed');
  }
  if (from === 2 && facts.administrators <= 1 && !(actor === 'operator' && force)) {
    return refuse('last-administrator');
  }
  return allow(to);
}
