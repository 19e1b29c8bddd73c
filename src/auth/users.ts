// Users as the admin sees them (contract §2, §6): disabling ends every session at once.
import type { Stores, UserMerge } from '../store/types.ts';

/**
 * Disables a user and deletes all of their sessions. The flag is set first, so a login racing this
 * either sees the flag or has its session deleted here (see login.ts). Null when there is no such user.
 */
export async function disableUser(stores: Stores, username: string): Promise<{ revoked: number } | null> {
  if (!(await stores.users.setActive(username, false))) return null;
  return { revoked: await stores.sessions.revokeUser(username) };
}

/** Re-enables a user; sessions deleted by the disable stay deleted. False when there is no such user. */
export function enableUser(stores: Stores, username: string): Promise<boolean> {
  return stores.users.setActive(username, true);
}

/** Logs a user out everywhere without disabling them; returns how many sessions ended. */
export function revokeSessions(stores: Stores, username: string): Promise<number> {
  return stores.sessions.revokeUser(username);
}

/**
 * Merges the user `from` (a name exactly as stored: the migration's disabled duplicates are not
 * canonical) into `into`: the memberships move, the higher status winning where both have one,
 * and `from` is gone with every session of theirs. Sessions in another store (Redis) end before
 * the database commits and again after, as the migration ends them, so none is left behind.
 */
export async function mergeUser(
  stores: Stores,
  from: string,
  into: string,
): Promise<(UserMerge & { readonly revoked: number }) | { readonly missing: string }> {
  if ((await stores.users.get(from)) === null) return { missing: from };
  let revoked = await stores.sessions.revokeUser(from);
  const merged = await stores.usernames.merge(from, into);
  if ('missing' in merged) return merged;
  revoked += await stores.sessions.revokeUser(from);
  return { ...merged, revoked };
}
