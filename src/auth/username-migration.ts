// The migration of stored usernames to their canonical form (contract §3, "One person, one
// identity"), where both the database and the session store are open: run by the server
// at start-up, by the primary of a cluster, and by `clubhouse migrate`; listed by `config check`.

import { USERNAME_MAX_LENGTH } from '../store/limits.ts';
import type { Canonicalizer, Stores, UsernameFinding } from '../store/types.ts';
import { storableUsername, type UsernameCase, usernameProfile } from './username.ts';

/**
 * What the database records its names were brought to: the profile and the Unicode version, so a
 * change of USERNAME_CASE, or an engine with newer Unicode data, brings them again.
 */
function profileTag(usernameCase: UsernameCase): string {
  return `${usernameProfile(usernameCase)}, Unicode ${process.versions.unicode}`;
}

/** The profile as the store is handed it: canonical and short enough to be stored (contract §4). */
export function storedCanonicalizer(usernameCase: UsernameCase): Canonicalizer {
  return (name) => {
    const stored = storableUsername(name, usernameCase);
    if (stored.ok) return stored;
    if (stored.refused === 'profile') return { ok: false, reason: stored.reason };
    return { ok: false, reason: `its canonical form has more than ${USERNAME_MAX_LENGTH} characters` };
  };
}

/**
 * Brings the stored usernames to the profile of `usernameCase` (UsernameFinding says how), and ends
 * every session of a renamed or disabled user wherever sessions live. Sessions in another store
 * (Redis) are ended before the database commits and again after, so a crash between the two leaves
 * none of them behind. Returns what changed ([] when the names were already brought to it).
 */
export async function migrateUsernames(
  stores: Stores,
  usernameCase: UsernameCase,
): Promise<UsernameFinding[]> {
  const tag = profileTag(usernameCase);
  if ((await stores.usernames.recordedProfile()) === tag) return [];
  const canonical = storedCanonicalizer(usernameCase);
  for (const finding of await stores.usernames.nonCanonical(canonical))
    await stores.sessions.revokeUser(finding.username);
  const findings = await stores.usernames.canonicalize(tag, canonical);
  if (findings === null) return []; // another process did it meanwhile
  for (const finding of findings) await stores.sessions.revokeUser(finding.username);
  return findings;
}

/**
 * The migration as a serving process runs it at start-up (the server, a cluster's primary): every
 * stored name it renamed or disabled told to `warn`, with the administrator's line (findingText).
 */
export async function migrateUsernamesAtStart(
  stores: Stores,
  usernameCase: UsernameCase,
  warn: (
    fields: { readonly username: string; readonly outcome: UsernameFinding['outcome'] },
    line: string,
  ) => void,
): Promise<void> {
  for (const finding of await migrateUsernames(stores, usernameCase))
    warn({ username: finding.username, outcome: finding.outcome }, findingText(finding, true));
}

/** Characters a POSIX shell reads as themselves in a word (others are quoted). */
const SHELL_PLAIN = /^[\p{L}\p{N}@%+=:,./_-]+$/u;

/** `word` as one shell word: as is, in single quotes, or (with control characters) bash's $'…'. */
function shellWord(word: string): string {
  if (SHELL_PLAIN.test(word)) return word;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are the point
  if (!/[\u0000-\u001f\u007f]/.test(word)) return `'${word.replaceAll("'", `'\\''`)}'`;
  const escaped = [...word]
    .map((c) => {
      const code = c.codePointAt(0)!;
      if (c === '\\' || c === "'") return `\\${c}`;
      return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : c;
    })
    .join('');
  return `$'${escaped}'`;
}

/**
 * The command that resolves a disabled duplicate: its memberships to `into` (the canonical name it
 * collides with; for a name the profile refuses, the administrator names the user), its row gone.
 */
export function mergeCommand(from: string, into: string | null): string {
  // `--`: a name that starts with a dash is FROM, not an option.
  const end = from.startsWith('-') ? '-- ' : '';
  return `clubhouse user merge ${end}${shellWord(from)} ${into === null ? 'USERNAME' : shellWord(into)}`;
}

/** One line for an administrator about a stored name that is not canonical (`done`: by this migration). */
export function findingText(finding: UsernameFinding, done: boolean): string {
  const name = JSON.stringify(finding.username);
  const target = JSON.stringify(finding.canonical);
  const kept = done
    ? 'disabled, keeps its name and memberships'
    : 'disabled by the migration, it keeps its name and memberships until an administrator moves them';
  switch (finding.outcome) {
    case 'renamed':
      return done
        ? `${name} renamed to ${target}`
        : `${name} is not canonical: the migration renames it to ${target}`;
    case 'collides':
      return `${name} collides with ${target}: ${kept}; to give them to ${target}: ${mergeCommand(finding.username, finding.canonical)}`;
    case 'refused':
      return `${name} is refused by the profile (${finding.reason}): ${kept}; to give them to the right user: ${mergeCommand(finding.username, null)}`;
  }
}
