// Stored usernames brought to their canonical form (contract §3, "One person, one identity"; issue
// 22): the data step of the migration, on either SQL engine. The profile itself is the caller's
// (a plain function: the store does not know PRECIS); the store records which profile, at which
// Unicode version, its names were last brought to, so the step runs again when either changes.
import type { Canonicalizer, UserMerge, UsernameFinding, UsernameMaintenance } from '../types.ts';
import { type SqlDriver, type Steps, select } from './driver.ts';

const PROFILE_KEY = 'username_profile';

interface StoredUser {
  readonly username: string;
  readonly active: boolean;
  readonly lastLoginAt: number;
}

function* storedUsers(): Steps<StoredUser[]> {
  const { rows } = yield { sql: 'SELECT username, active, last_login_at FROM users', params: [] };
  return rows.map((row) => ({
    username: String(row['username']),
    active: Number(row['active']) === 1 || row['active'] === true,
    lastLoginAt: row['last_login_at'] === null ? -1 : Number(row['last_login_at']),
  }));
}

/** Code-point order (UTF-8 byte order), as `user list` sorts; JavaScript's `<` compares UTF-16 units. */
const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** What should become of each stored name that is not canonical (none for a canonical one). */
function plan(users: readonly StoredUser[], canonical: Canonicalizer): UsernameFinding[] {
  const names = new Set(users.map((u) => u.username));
  const findings: UsernameFinding[] = [];
  const claims = new Map<string, StoredUser[]>();
  for (const user of users) {
    const result = canonical(user.username);
    if (!result.ok) {
      findings.push({ username: user.username, canonical: null, outcome: 'refused', reason: result.reason });
    } else if (result.username !== user.username) {
      claims.set(result.username, [...(claims.get(result.username) ?? []), user]);
    }
  }
  for (const [target, claimants] of claims) {
    // Where the canonical name exists, it is kept; else one claimant takes it: the active one
    // that logged in last (the person most likely still using it), ties by code-point order.
    const winner = names.has(target)
      ? null
      : [...claimants].sort(
          (a, b) =>
            Number(b.active) - Number(a.active) ||
            b.lastLoginAt - a.lastLoginAt ||
            byCodePoint(a.username, b.username),
        )[0]!;
    for (const user of claimants) {
      findings.push({
        username: user.username,
        canonical: target,
        outcome: user === winner ? 'renamed' : 'collides',
        reason: null,
      });
    }
  }
  return findings.sort((a, b) => byCodePoint(a.username, b.username));
}

/** Moves a user to its canonical name: the row, its memberships and passkeys; its sessions end (they hold the old name). */
function* rename(from: string, to: string): Steps<void> {
  yield {
    sql: 'INSERT INTO users (username, active, created_at, last_login_at, password_sign_in) SELECT $2, active, created_at, last_login_at, password_sign_in FROM users WHERE username = $1',
    params: [from, to],
  };
  yield { sql: 'UPDATE memberships SET username = $2 WHERE username = $1', params: [from, to] };
  // contract §12: the passkeys and the user handle they were made for follow the user.
  yield { sql: 'UPDATE passkeys SET username = $2 WHERE username = $1', params: [from, to] };
  yield { sql: 'UPDATE passkey_users SET username = $2 WHERE username = $1', params: [from, to] };
  yield* disable(from);
  // The old row goes with whatever still names it (known clients: the owner logs in again once).
  yield { sql: 'DELETE FROM known_clients WHERE username = $1', params: [from] };
  yield { sql: 'DELETE FROM users WHERE username = $1', params: [from] };
}

function* disable(username: string): Steps<void> {
  yield { sql: 'UPDATE users SET active = $2 WHERE username = $1', params: [username, false] };
  yield { sql: 'DELETE FROM sessions WHERE username = $1', params: [username] };
}

/**
 * One transaction: unless the names were last brought to `profile`, renames each non-canonical
 * name to its canonical form, disables the ones that collide or that the profile refuses (they keep
 * their name and memberships, for an administrator to resolve), ends the sessions of all of them in
 * this database, and records `profile`. Null when there was nothing to do.
 */
function* canonicalize(
  lockUsers: string | null,
  profile: string,
  canonical: Canonicalizer,
): Steps<UsernameFinding[] | null> {
  // Several processes may start at once: the first one does the work, the others then see it done.
  if (lockUsers !== null) yield { sql: lockUsers, params: [] };
  const { rows } = yield { sql: 'SELECT value FROM meta WHERE key = $1', params: [PROFILE_KEY] };
  const recorded = rows[0] === undefined ? null : Buffer.from(rows[0]['value'] as Uint8Array).toString();
  if (recorded === profile) return null;
  const findings = plan(yield* storedUsers(), canonical);
  for (const finding of findings) {
    if (finding.outcome === 'renamed') yield* rename(finding.username, finding.canonical!);
    else yield* disable(finding.username);
  }
  yield {
    sql: 'INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    params: [PROFILE_KEY, Buffer.from(profile)],
  };
  return findings;
}

/** Statuses rank pending (0) < member (1) < administrator (2): a merge keeps the higher of two. */
function* merge(
  lockUsers: string | null,
  from: string,
  into: string,
): Steps<UserMerge | { missing: string }> {
  // Another merge or the migration waits: both users stay as read until this commits.
  if (lockUsers !== null) yield { sql: lockUsers, params: [] };
  const { rows } = yield {
    sql: 'SELECT username FROM users WHERE username IN ($1, $2)',
    params: [from, into],
  };
  const found = new Set(rows.map((row) => String(row['username'])));
  for (const name of [from, into]) if (!found.has(name)) return { missing: name };
  const { rows: counted } = yield {
    sql: 'SELECT count(*) AS n FROM memberships WHERE username = $1',
    params: [from],
  };
  const total = Number(counted[0]?.['n'] ?? 0);
  const { changes: raised } = yield {
    sql: `UPDATE memberships AS m SET status = f.status FROM memberships AS f
      WHERE m.username = $2 AND f.username = $1 AND f.group_id = m.group_id AND f.status > m.status`,
    params: [from, into],
  };
  const { changes: moved } = yield {
    sql: `INSERT INTO memberships (username, group_id, status) SELECT $2, group_id, status FROM memberships
      WHERE username = $1 ON CONFLICT (username, group_id) DO NOTHING`,
    params: [from, into],
  };
  yield { sql: 'DELETE FROM memberships WHERE username = $1', params: [from] };
  yield* disable(from);
  yield { sql: 'DELETE FROM known_clients WHERE username = $1', params: [from] };
  yield { sql: 'DELETE FROM users WHERE username = $1', params: [from] };
  return { moved, raised, kept: total - moved - raised };
}

/** The UsernameMaintenance of a SQL database. */
export function sqlUsernameMaintenance({ run, dialect }: SqlDriver): UsernameMaintenance {
  return {
    recordedProfile: async () => {
      const rows = await run(
        select({ sql: 'SELECT value FROM meta WHERE key = $1', params: [PROFILE_KEY] }, (r) => r),
      );
      return rows[0] === undefined ? null : Buffer.from(rows[0]['value'] as Uint8Array).toString();
    },
    canonicalize: (profile, canonical) => run(canonicalize(dialect.lockUsers, profile, canonical), 'bulk'),
    nonCanonical: async (canonical) => plan(await run(storedUsers(), 'snapshot'), canonical),
    merge: (from, into) => run(merge(dialect.lockUsers, from, into), 'write'),
  };
}
