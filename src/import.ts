// The import file of contract §4: validated whole, every bad entry named by its JSON path and reason.
import type { UsernameCase } from './config.ts';
import { canonicalUsername } from './credentials.ts';
import { ImportConflictError, type ImportProblem } from './store/conflicts.ts';
import { GROUP_LIMITS, MAX_GROUP_ID, USERNAME_MAX_LENGTH } from './store/limits.ts';
import type { Group, ImportData, Membership, Stores } from './store/types.ts';

export type ImportValidation =
  | { readonly ok: true; readonly data: ImportData }
  | { readonly ok: false; readonly problems: ImportProblem[] };

const GROUP_FIELDS = new Set(['id', 'name', 'description', 'short_description', 'activities', 'type']);
const USER_FIELDS = new Set(['username', 'active']);
const MEMBERSHIP_FIELDS = new Set(['group', 'username', 'status']);
const TOP_FIELDS = new Set(['groups', 'users', 'memberships']);

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const length = (value: string): number => [...value].length;

/**
 * Why a string cannot be stored and read back exactly, or null: SQLite's text ends at U+0000 when
 * read, and a lone surrogate has no UTF-8 form (it would come back as U+FFFD).
 */
function unstorableText(value: string): string | null {
  if (value.includes('\u0000')) return 'may not contain U+0000';
  if (!value.isWellFormed()) return 'must be well-formed Unicode (no lone surrogates)';
  return null;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
const BAD_USERNAME_CHARACTER = /[\s\u0000-\u001f\u007f]/u;

/** A username as stored: trimmed, canonical case, same rules as login. Returns a reason when bad. */
export function checkUsername(
  value: unknown,
  usernameCase: UsernameCase,
): { username: string } | { reason: string } {
  if (typeof value !== 'string') return { reason: 'must be a string' };
  const trimmed = value.trim();
  if (trimmed === '') return { reason: 'may not be blank' };
  if (BAD_USERNAME_CHARACTER.test(trimmed))
    return { reason: 'may not contain white space or control characters' };
  const unstorable = unstorableText(trimmed);
  if (unstorable !== null) return { reason: unstorable };
  const username = canonicalUsername(trimmed, usernameCase);
  if (length(username) > USERNAME_MAX_LENGTH)
    return { reason: `must have at most ${USERNAME_MAX_LENGTH} characters` };
  return { username };
}

/** A group id: an integer from 1 to 2^31−1. */
export function isGroupId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_GROUP_ID;
}

function unknownFields(
  entry: Record<string, unknown>,
  allowed: Set<string>,
  path: string,
  problems: ImportProblem[],
) {
  for (const key of Object.keys(entry)) {
    if (!allowed.has(key)) problems.push({ path: `${path}.${key}`, reason: 'unknown field' });
  }
}

/** Checks one group's entry; missing text fields default to "" and type to 0. */
export function checkGroup(
  entry: Record<string, unknown>,
  path: string,
  problems: ImportProblem[],
): Group | null {
  const before = problems.length;
  unknownFields(entry, GROUP_FIELDS, path, problems);
  if (!isGroupId(entry['id']))
    problems.push({ path: `${path}.id`, reason: `must be an integer from 1 to ${MAX_GROUP_ID}` });
  const fields = groupFields(entry, path, problems);
  return problems.length === before ? { id: entry['id'] as number, ...fields } : null;
}

/** Checks a group's entry without an id (`clubhouse group add` lets the store pick one). */
export function checkGroupFields(
  entry: Record<string, unknown>,
  path: string,
  problems: ImportProblem[],
): Omit<Group, 'id'> | null {
  const before = problems.length;
  unknownFields(entry, GROUP_FIELDS, path, problems);
  const fields = groupFields(entry, path, problems);
  return problems.length === before ? fields : null;
}

/** The text fields and type of a group entry, with a problem for each bad one. */
function groupFields(entry: Record<string, unknown>, path: string, problems: ImportProblem[]) {
  const text = (field: keyof typeof GROUP_LIMITS, required: boolean): string => {
    const value = entry[field];
    if (value === undefined && !required) return '';
    if (typeof value !== 'string') {
      problems.push({
        path: `${path}.${field}`,
        reason: required ? 'is required and must be a string' : 'must be a string',
      });
      return '';
    }
    if (required && value.trim() === '')
      problems.push({ path: `${path}.${field}`, reason: 'may not be blank' });
    const unstorable = unstorableText(value);
    if (unstorable !== null) problems.push({ path: `${path}.${field}`, reason: unstorable });
    if (length(value) > GROUP_LIMITS[field]) {
      problems.push({
        path: `${path}.${field}`,
        reason: `must have at most ${GROUP_LIMITS[field]} characters`,
      });
    }
    return value;
  };
  const fields = {
    name: text('name', true),
    description: text('description', false),
    short_description: text('short_description', false),
    activities: text('activities', false),
    // Only an absent type defaults: `null` is a wrong value, not a missing one.
    type: (entry['type'] === undefined ? 0 : entry['type']) as 0 | 1,
  };
  if (fields.type !== 0 && fields.type !== 1)
    problems.push({ path: `${path}.type`, reason: 'must be 0 (normal) or 1 (classroom)' });
  return fields;
}

function list(root: Record<string, unknown>, key: string, problems: ImportProblem[]): unknown[] {
  const value = root[key];
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    problems.push({ path: key, reason: 'must be a list' });
    return [];
  }
  return value;
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
  for (const [index, entry] of list(json, 'groups', problems).entries()) {
    const path = `groups[${index}]`;
    if (!isObject(entry)) {
      problems.push({ path, reason: 'must be an object' });
      continue;
    }
    const group = checkGroup(entry, path, problems);
    if (group === null) continue;
    const sameId = ids.get(group.id);
    if (sameId !== undefined) {
      problems.push({ path: `${path}.id`, reason: `duplicate of ${sameId}.id` });
      continue;
    }
    const sameName = names.get(group.name);
    if (sameName !== undefined) {
      problems.push({ path: `${path}.name`, reason: `duplicate of ${sameName}.name` });
      continue;
    }
    ids.set(group.id, path);
    names.set(group.name, path);
    groups.push(group);
  }

  const users: { username: string; active: boolean | null }[] = [];
  const usernames = new Map<string, string>();
  for (const [index, entry] of list(json, 'users', problems).entries()) {
    const path = `users[${index}]`;
    if (!isObject(entry)) {
      problems.push({ path, reason: 'must be an object' });
      continue;
    }
    const before = problems.length;
    unknownFields(entry, USER_FIELDS, path, problems);
    const checked = checkUsername(entry['username'], usernameCase);
    if ('reason' in checked) problems.push({ path: `${path}.username`, reason: checked.reason });
    // contract §4: a missing `active` keeps the flag; only `"active": true` re-enables a user.
    const active = entry['active'] === undefined ? null : entry['active'];
    if (active !== null && typeof active !== 'boolean')
      problems.push({ path: `${path}.active`, reason: 'must be true or false' });
    if (problems.length > before || !('username' in checked)) continue;
    const same = usernames.get(checked.username);
    if (same !== undefined) {
      problems.push({ path: `${path}.username`, reason: `duplicate of ${same}.username` });
      continue;
    }
    usernames.set(checked.username, path);
    users.push({ username: checked.username, active: active as boolean | null });
  }

  const memberships: Membership[] = [];
  const pairs = new Map<string, string>();
  for (const [index, entry] of list(json, 'memberships', problems).entries()) {
    const path = `memberships[${index}]`;
    if (!isObject(entry)) {
      problems.push({ path, reason: 'must be an object' });
      continue;
    }
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
    const same = pairs.get(key);
    if (same !== undefined) {
      problems.push({ path, reason: `duplicate of ${same}` });
      continue;
    }
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
