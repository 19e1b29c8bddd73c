// The import file of contract §4: validated whole, every bad entry named by its JSON path and reason.
import type { UsernameCase } from '../auth/username.ts';
import { ImportConflictError, type ImportProblem } from '../store/errors.ts';
import type { Group, ImportData, Membership } from '../store/group-types.ts';
import type { Stores } from '../store/types.ts';
import { checkGroup, checkUsername, isGroupId, unknownFields } from './import-fields.ts';

export type ImportValidation =
  | { readonly ok: true; readonly data: ImportData }
  | { readonly ok: false; readonly problems: ImportProblem[] };

const USER_FIELDS = new Set(['username', 'active']);
const MEMBERSHIP_FIELDS = new Set(['group', 'username', 'status']);
const TOP_FIELDS = new Set(['groups', 'users', 'memberships']);

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * The object entries of the list at `key`, each with its JSON path, in order; any other entry is a
 * problem, recorded when the walk reaches it (so problems stay in the file's order).
 */
function* objectEntries(
  root: Record<string, unknown>,
  key: string,
  problems: ImportProblem[],
): Generator<{ readonly entry: Record<string, unknown>; readonly path: string }> {
  const value = root[key];
  if (value === undefined) return;
  if (!Array.isArray(value)) {
    problems.push({ path: key, reason: 'must be a list' });
    return;
  }
  for (const [index, entry] of value.entries()) {
    const path = `${key}[${index}]`;
    if (isObject(entry)) yield { entry, path };
    else problems.push({ path, reason: 'must be an object' });
  }
}

/**
 * Whether `key` was already given by an earlier entry (recorded in `seen` by its path); if so, a
 * problem at `path` + `field` naming that entry.
 */
function duplicate<K>(
  seen: ReadonlyMap<K, string>,
  key: K,
  path: string,
  field: string,
  problems: ImportProblem[],
): boolean {
  const same = seen.get(key);
  if (same !== undefined) problems.push({ path: `${path}${field}`, reason: `duplicate of ${same}${field}` });
  return same !== undefined;
}

/** Validates a parsed import file; nothing is applied unless every entry is good. */
export function validateImport(json: unknown, usernameCase: UsernameCase): ImportValidation {
  const problems: ImportProblem[] = [];
  if (!isObject(json))
    return {
      ok: false,
      problems: [{ path: '$', reason: 'must be an object with groups, users and memberships' }],
    };
  unknownFields(json, TOP_FIELDS, '$', problems);

  const groups: Group[] = [];
  const ids = new Map<number, string>();
  const names = new Map<string, string>();
  for (const { entry, path } of objectEntries(json, 'groups', problems)) {
    const group = checkGroup(entry, path, problems);
    if (group === null) continue;
    if (duplicate(ids, group.id, path, '.id', problems)) continue;
    if (duplicate(names, group.name, path, '.name', problems)) continue;
    ids.set(group.id, path);
    names.set(group.name, path);
    groups.push(group);
  }

  const users: { username: string; active: boolean | null }[] = [];
  const usernames = new Map<string, string>();
  for (const { entry, path } of objectEntries(json, 'users', problems)) {
    const before = problems.length;
    unknownFields(entry, USER_FIELDS, path, problems);
    const checked = checkUsername(entry['username'], usernameCase);
    if ('reason' in checked) problems.push({ path: `${path}.username`, reason: checked.reason });
    // contract §4: a missing `active` keeps the flag; only `"active": true` re-enables a user.
    const active = entry['active'] === undefined ? null : entry['active'];
    if (active !== null && typeof active !== 'boolean')
      problems.push({ path: `${path}.active`, reason: 'must be true or false' });
    if (problems.length > before || !('username' in checked)) continue;
    if (duplicate(usernames, checked.username, path, '.username', problems)) continue;
    usernames.set(checked.username, path);
    users.push({ username: checked.username, active: active as boolean | null });
  }

  const memberships: Membership[] = [];
  const pairs = new Map<string, string>();
  for (const { entry, path } of objectEntries(json, 'memberships', problems)) {
    const before = problems.length;
    unknownFields(entry, MEMBERSHIP_FIELDS, path, problems);
    if (!isGroupId(entry['group'])) problems.push({ path: `${path}.group`, reason: 'must be a group id' });
    const checked = checkUsername(entry['username'], usernameCase);
    if ('reason' in checked) problems.push({ path: `${path}.username`, reason: checked.reason });
    const status = entry['status'];
    if (status !== 0 && status !== 1 && status !== 2) {
      problems.push({
        path: `${path}.status`,
        reason: 'must be 0 (pending), 1 (member) or 2 (administrator)',
      });
    }
    if (problems.length > before || !('username' in checked)) continue;
    const key = `${entry['group']}\0${checked.username}`;
    if (duplicate(pairs, key, path, '', problems)) continue;
    pairs.set(key, path);
    memberships.push({
      group: entry['group'] as number,
      username: checked.username,
      status: status as 0 | 1 | 2,
    });
  }

  return problems.length === 0 ? { ok: true, data: { groups, users, memberships } } : { ok: false, problems };
}

export type ImportOutcome =
  | { readonly ok: true; readonly counts: { groups: number; users: number; memberships: number } }
  | { readonly ok: false; readonly problems: ImportProblem[] };

/**
 * Validates and applies a parsed import file in one transaction (`clubhouse import`, the demo, the
 * tests), then ends every session of each user the file disables (contract §2).
 */
export async function applyImport(
  stores: Pick<Stores, 'groups' | 'sessions'>,
  json: unknown,
  usernameCase: UsernameCase,
): Promise<ImportOutcome> {
  const validation = validateImport(json, usernameCase);
  if (!validation.ok) return validation;
  let counts: { groups: number; users: number; memberships: number };
  try {
    counts = await stores.groups.importData(validation.data);
  } catch (err) {
    if (err instanceof ImportConflictError) return { ok: false, problems: err.problems };
    throw err;
  }
  // After the commit, as disableUser does: a login racing this either sees the flag or has its new
  // session deleted here. Sessions may live elsewhere (Redis), so this cannot be in the transaction;
  // if it fails, the error says so and running the (idempotent) import again finishes the job.
  for (const user of validation.data.users) {
    if (user.active === false) await stores.sessions.revokeUser(user.username);
  }
  return { ok: true, counts };
}
