// Seeds a fresh SQLite database for the benchmark: users, sessions (stored as SHA-256 like the
// service does), groups and memberships, with prepared statements inside large transactions.
// Writes the raw ids of the sessions the load uses, with their users' groups, for the wrk scripts.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { hashSessionId, SESSION_MAX_AGE_SECONDS } from '../../src/auth/sessions.ts';
import { transaction } from '../../src/store/sqlite/driver.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';

export interface SeedPlan {
  /** Rows in sessions; the first `loadSessions` of them are the ones the load uses. */
  readonly sessions: number;
  /** Users `load00000`..; sessions are spread round-robin over them. */
  readonly users: number;
  /** Sessions whose raw ids are kept (one per user while loadSessions ≤ users). */
  readonly loadSessions: number;
  readonly groups: number;
  /** Groups each user belongs to (status 1 or 2). */
  readonly groupsPerUser: number;
}

export interface SeedResult {
  readonly path: string;
  /** One line per load session: `<raw id> <group id> <group id> ...` (the session user's groups). */
  readonly loadFile: string;
  readonly seconds: number;
}

const BATCH = 50_000;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const DAY_MS = 86_400_000;

/**
 * `count` session ids of 32 random characters of [a-z0-9] (the shape of a real one; modulo bias is
 * harmless here), packed in one buffer so a million of them cost the garbage collector nothing.
 */
export function rawSessionIds(count: number): Buffer {
  const ids = randomBytes(count * 32);
  for (let j = 0; j < ids.length; j++) ids[j] = ALPHABET.charCodeAt(ids[j]! % 36);
  return ids;
}

export function sessionId(ids: Buffer, i: number): string {
  return ids.toString('latin1', i * 32, i * 32 + 32);
}

export function username(index: number): string {
  return `load${String(index).padStart(5, '0')}`;
}

/** The `groupsPerUser` distinct group ids of user `index` (a fixed stride, so no lookups while seeding). */
export function groupsOf(index: number, plan: SeedPlan): number[] {
  const ids: number[] = [];
  const stride = Math.floor(plan.groups / plan.groupsPerUser);
  for (let k = 0; k < plan.groupsPerUser; k++) ids.push(((index * 7919 + k * stride) % plan.groups) + 1);
  return ids.sort((a, b) => a - b);
}

/** Group `id` as the import file of contract §4 has it (every 5th one of type 1). */
export function groupOf(id: number) {
  return {
    id,
    name: `Group ${String(id).padStart(6, '0')}`,
    description: `Group number ${id}: a club that meets every week to practise, plan trips and welcome newcomers.`,
    short_description: `Weekly meetings of group ${id}`,
    activities: 'Meetings, trips, a yearly tournament',
    type: id % 5 === 0 ? 1 : 0,
  } as const;
}

/** The status of a user's k-th membership: every 4th an administrator (2), else a member (1). */
export const statusOf = (k: number): 1 | 2 => (k % 4 === 0 ? 2 : 1);

/**
 * Session i's times: created within the last 7 days, so every one is still live for at least 7
 * more days (SESSION_MAX_AGE_SECONDS is 14 days).
 */
export function sessionTimes(i: number, now: number): { createdAt: number; expiresAt: number } {
  const createdAt = now - ((i * 104_729) % (7 * DAY_MS));
  return { createdAt, expiresAt: createdAt + SESSION_MAX_AGE_SECONDS * 1000 };
}

/** The load file's lines: `<raw id> <group id> …` for the first `plan.loadSessions` sessions. */
export function loadLines(ids: Buffer, plan: SeedPlan): string {
  const lines: string[] = [];
  for (let i = 0; i < plan.loadSessions; i++) {
    lines.push(`${sessionId(ids, i)} ${groupsOf(i % plan.users, plan).join(' ')}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Indices of `hashes` in (nearly) ascending byte order: sorted by their first 44 bits, the index
 * packed into the low 20 bits of one BigUint64 (a native numeric sort, no comparator calls).
 * Two hashes sharing 44 bits are rare and merely inserted out of order.
 */
function keyOrder(hashes: Buffer, count: number): Uint32Array {
  if (count > 1 << 20) throw new Error('keyOrder packs indices into 20 bits');
  const keys = new BigUint64Array(count);
  for (let i = 0; i < count; i++) keys[i] = ((hashes.readBigUInt64BE(i * 32) >> 20n) << 20n) | BigInt(i);
  keys.sort();
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = Number(keys[i]! & 0xfffffn);
  return order;
}

/** Runs `insert(i)` for i in [0, count) in transactions of BATCH rows. */
function inBatches(db: Parameters<typeof transaction>[0], count: number, insert: (i: number) => void): void {
  for (let start = 0; start < count; start += BATCH) {
    const end = Math.min(count, start + BATCH);
    transaction(db, () => {
      for (let i = start; i < end; i++) insert(i);
    });
  }
}

/** Creates `path` (which must not exist) with the schema migrated and `plan` inserted. */
export function seedDatabase(path: string, loadFile: string, plan: SeedPlan): SeedResult {
  const started = performance.now();
  const stores = openSqliteStores(path);
  if (stores.engine.database !== 'sqlite') throw new Error('a SQLite store was asked for');
  const { db } = stores.engine;
  const now = Date.now();
  // A throw-away file: no durability needed while filling it; WAL again before the server opens it.
  db.exec(`
    PRAGMA journal_mode = MEMORY;
    PRAGMA synchronous = OFF;
    PRAGMA cache_size = -262144;
  `);
  try {
    const insertUser = db.prepare(
      'INSERT INTO users (username, active, created_at, last_login_at) VALUES (?, 1, ?, ?)',
    );
    inBatches(db, plan.users, (i) => insertUser.run(username(i), now - 30 * DAY_MS, now - DAY_MS));

    const insertGroup = db.prepare(
      'INSERT INTO groups (id, name, description, short_description, activities, type) VALUES (?, ?, ?, ?, ?, ?)',
    );
    inBatches(db, plan.groups, (i) => {
      const g = groupOf(i + 1);
      insertGroup.run(g.id, g.name, g.description, g.short_description, g.activities, g.type);
    });

    const insertMembership = db.prepare(
      'INSERT INTO memberships (username, group_id, status) VALUES (?, ?, ?)',
    );
    inBatches(db, plan.users, (i) => {
      const name = username(i);
      groupsOf(i, plan).forEach((groupId, k) => {
        insertMembership.run(name, groupId, statusOf(k));
      });
    });

    // Sessions: id i belongs to user i % users (times: sessionTimes). Inserted in key order with
    // the secondary indexes dropped and rebuilt after (the same SQL, read back from the schema): a
    // sorted bulk load instead of a million random B-tree inserts.
    const ids = rawSessionIds(plan.sessions);
    const hashes = Buffer.allocUnsafe(plan.sessions * 32);
    for (let i = 0; i < plan.sessions; i++) hashSessionId(sessionId(ids, i)).copy(hashes, i * 32);
    const order = keyOrder(hashes, plan.sessions);
    const usernames = Array.from({ length: plan.users }, (_, i) => username(i));
    const indexes = db
      .prepare(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' AND sql IS NOT NULL",
      )
      .all()
      .map((row) => ({ name: String(row['name']), sql: String(row['sql']) }));
    for (const index of indexes) db.exec(`DROP INDEX ${index.name}`);
    const insertSession = db.prepare(
      'INSERT INTO sessions (id_hash, username, created_at, expires_at) VALUES (?, ?, ?, ?)',
    );
    inBatches(db, plan.sessions, (k) => {
      const i = order[k]!;
      const { createdAt, expiresAt } = sessionTimes(i, now);
      insertSession.run(
        hashes.subarray(i * 32, i * 32 + 32),
        usernames[i % plan.users]!,
        createdAt,
        expiresAt,
      );
    });
    transaction(db, () => {
      for (const index of indexes) db.exec(index.sql);
    });
    db.exec('PRAGMA journal_mode = WAL');
    writeFileSync(loadFile, loadLines(ids, plan));
  } finally {
    db.close();
  }
  return { path, loadFile, seconds: (performance.now() - started) / 1000 };
}
