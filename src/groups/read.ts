// Reading groups (contract §3): the caller's groups, and one group with the caller's membership.

import { type Group, type GroupDetail, type GroupStore, hasGroupCache } from '../store/group-types.ts';
import { MAX_GROUP_ID } from '../store/limits.ts';

/** The group id of a path segment: `[0-9]+`, leading zeros allowed, at most 2^31−1; else null. */
export function parseGroupId(segment: string): number | null {
  if (!/^[0-9]+$/.test(segment)) return null;
  const digits = segment.replace(/^0+(?=[0-9])/, '');
  if (digits.length > 10) return null;
  const id = Number(digits);
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

/**
 * myGroups as the JSON the route sends, when the store can answer from memory (hasGroupCache);
 * undefined when myGroups must be asked.
 */
export function myGroupsJson(store: GroupStore, username: string): string | Buffer | undefined {
  return hasGroupCache(store) ? store.peekList(username) : undefined;
}

/** groupDetail as the JSON the route sends, from memory; undefined when groupDetail must be asked. */
export function groupDetailJson(
  store: GroupStore,
  id: number,
  username: string,
): string | Buffer | undefined {
  return hasGroupCache(store) ? store.peekDetail(id, username) : undefined;
}
