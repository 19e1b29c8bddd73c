// Reading groups (contract §3): the caller's groups, and one group with the caller's membership.

import type { Group, GroupDetail, GroupStore } from '../store/group-types.ts';
import { MAX_GROUP_ID } from '../store/limits.ts';

/** The group id of a path segment: `[0-9]+`, leading zeros allowed, at most 2^31−1; else null. */
export function parseGroupId(segment: string): number | null {
  if (!/^[0-9]+$/.test(segment)) return null;
  // Number reads leading zeros as decimals. More than ten significant digits make at least 10^10
  // however the value rounds (Infinity for hundreds of them): out of range.
  const id = Number(segment);
  return id >= 1 && id <= MAX_GROUP_ID ? id : null;
}

/** Groups where `username` is a member (1) or administrator (2), in id order. */
export function myGroups(store: GroupStore, username: string): Promise<Group[]> {
  return store.listForMember(username);
}

/** One group with `username`'s member_status (−1 when not a member); null when there is no such group. */
export function groupDetail(store: GroupStore, id: number, username: string): Promise<GroupDetail | null> {
  return store.detail(id, username);
}
