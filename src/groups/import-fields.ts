// The fields of the import file (contract §4), checked one by one; the import (import.ts) and the
// admin commands (cli/) share them, so a group or username is refused for the same reasons.

import { codePointLength, refusalText, storableUsername, type UsernameCase } from '../auth/username.ts';
import type { ImportProblem } from '../store/errors.ts';
import type { Group } from '../store/group-types.ts';
import { GROUP_LIMITS, MAX_GROUP_ID, USERNAME_MAX_LENGTH } from '../store/limits.ts';

const GROUP_FIELDS = new Set(['id', 'name', 'description', 'short_description', 'activities', 'type']);

/**
 * Why a string cannot be stored and read back exactly, or null: SQLite's text ends at U+0000 when
 * read, and a lone surrogate has no UTF-8 form (it would come back as U+FFFD).
 */
export function unstorableText(value: string): string | null {
  if (value.includes('\u0000')) return 'may not contain U+0000';
  if (!value.isWellFormed()) return 'must be well-formed Unicode (no lone surrogates)';
  return null;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
const BAD_USERNAME_CHARACTER = /[\s\u0000-\u001f\u007f]/u;

/**
 * A username as stored: trimmed and canonical (contract §3: the same profile as login, username.ts).
 * Returns a reason when bad, e.g. a character the profile refuses.
 */
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
  const stored = storableUsername(trimmed, usernameCase);
  if (stored.ok) return { username: stored.username };
  if (stored.refused === 'profile') return { reason: refusalText(stored.reason, usernameCase) };
  return { reason: `must have at most ${USERNAME_MAX_LENGTH} characters` };
}

/** A group id: an integer from 1 to 2^31−1. */
export function isGroupId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_GROUP_ID;
}

/** Adds an `unknown field` problem for each key of `entry` not in `allowed`. */
export function unknownFields(
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
    if (codePointLength(value) > GROUP_LIMITS[field]) {
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
