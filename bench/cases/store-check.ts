// A microbenchmark of the store's part of the hot paths, before/after in one process: the session
// memory's answer as the raw check path asks it (a catch-up, then memory), with "anything
// committed?" asked of PRAGMA data_version on every call (before: unwatched()) or of the WAL-index
// header (after: watchCommits), in alternating rounds so that a busy machine weighs on both alike;
// then the group memory's answers. A second connection on the same file commits now and then in the
// last case, as another worker would. `node --disable-warning=ExperimentalWarning
// bench/cases/store-check.ts` prints µs per call.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { SERVING_MEMORY } from '../../src/app.ts';
import { hashSessionId } from '../../src/auth/sessions.ts';
import { answerWindows, withWindowsOpen } from '../../src/store/freshness/gate.ts';
import { type CommitWatch, unwatched, watchCommits } from '../../src/store/sqlite/commit-watch.ts';
import { sqliteDriver } from '../../src/store/sqlite/driver.ts';
import { sqliteCatchUp } from '../../src/store/sqlite/freshness.ts';
import { sqliteSessionMemory } from '../../src/store/sqlite/sessions.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';

const CALLS = 200_000;
const ROUNDS = 15;

/** µs per call of each contender, alternating rounds; median and minimum over the rounds. */
function race(cases: Record<string, () => unknown>): void {
  const figures = new Map<string, number[]>(Object.keys(cases).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, work] of Object.entries(cases)) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < CALLS; i++) work();
      figures.get(name)!.push(Number(process.hrtime.bigint() - started) / 1000 / CALLS);
    }
  }
  for (const [name, values] of figures) {
    values.sort((a, b) => a - b);
    const median = values[Math.floor(values.length / 2)]!;
    process.stdout.write(`${name}: ${median.toFixed(3)} µs per call (min ${values[0]!.toFixed(3)})\n`);
  }
}

/** SQLite's session memory over `watch`, and its answer as the raw check path asks it. */
function sessionMemory(db: DatabaseSync, watch: CommitWatch) {
  const windows = answerWindows();
  const sessions = sqliteSessionMemory(db, sqliteDriver(db), windows.sessions, 1000);
  const catchUp = sqliteCatchUp(watch, { sessions: sessions.catchUp });
  return {
    store: sessions.store,
    answer: (key: string, now: number) => {
      catchUp(['sessions']);
      return withWindowsOpen(windows, ['sessions'], () => sessions.answers.answer(key, now));
    },
  };
}

const sqliteOf = (opened: ReturnType<typeof openSqliteStores>) => {
  if (opened.engine.database !== 'sqlite') throw new Error('a SQLite store was asked for');
  return opened.engine.db;
};

const dir = mkdtempSync(join(tmpdir(), 'clubhouse-store-check-'));
const path = join(dir, 'db.sqlite');
const stores = openSqliteStores(path, { memory: SERVING_MEMORY });
const other = openSqliteStores(path, { migrate: false });
const db = sqliteOf(stores);
const watch = watchCommits(db);
try {
  const now = Date.now();
  const groups = Array.from({ length: 20 }, (_, i) => ({
    id: i + 1,
    name: `Group ${i + 1}`,
    description: `Weekly meetings of group ${i + 1}, with a description about as long as the bench's`,
    short_description: 'Come along',
    activities: 'Talks, walks and games',
    type: (i % 2) as 0 | 1,
  }));
  await stores.groups.importData({
    groups,
    users: [{ username: 'alice', active: true }],
    memberships: groups.map((g) => ({ group: g.id, username: 'alice', status: 1 as const })),
  });
  const idHash = hashSessionId('a'.repeat(32));
  await stores.sessions.create(
    {
      idHash,
      username: 'alice',
      createdAt: now,
      expiresAt: now + 3_600_000,
      clientIp: null,
      userAgent: null,
    },
    100,
  );
  const key = idHash.toString('hex');
  const before = sessionMemory(db, unwatched());
  const after = sessionMemory(db, watch);
  await before.store.get(idHash, now);
  await after.store.get(idHash, now);
  if (before.answer(key, now)?.username !== 'alice' || after.answer(key, now)?.username !== 'alice')
    throw new Error('the sessions are not in memory');
  race({
    'session from memory, before (data_version every call)': () => before.answer(key, now),
    'session from memory, after (WAL-index header)': () => after.answer(key, now),
  });
  // Another connection commits (a login elsewhere) before every 100th call: the slow path's share.
  const touch = sqliteOf(other).prepare('UPDATE sessions SET last_seen = ? WHERE id_hash = ?');
  let n = 0;
  const committing = (answer: () => unknown) => () => {
    if (++n % 100 === 0) touch.run(n, idHash);
    return answer();
  };
  race({
    'session from memory + a commit elsewhere every 100 calls, before': committing(() =>
      before.answer(key, now),
    ),
    'session from memory + a commit elsewhere every 100 calls, after': committing(() =>
      after.answer(key, now),
    ),
  });
  const memory = stores.memory.groups;
  if (memory !== null) {
    const { freshness } = stores;
    const fromMemory = <T>(read: () => T) => {
      freshness.catchUp(['groups']);
      return freshness.answerFromMemory(read, ['groups']);
    };
    await stores.groups.listForMember('alice');
    await stores.groups.detail(7, 'alice');
    const list = fromMemory(() => memory.list('alice'));
    if (list === undefined || fromMemory(() => memory.detail(7, 'alice')) === undefined)
      throw new Error('not in memory');
    race({
      [`group list from memory (20 groups, ${list.length} bytes)`]: () =>
        fromMemory(() => memory.list('alice')),
      'group detail from memory': () => fromMemory(() => memory.detail(7, 'alice')),
      // Synchronous under the promise: the read snapshot and the refill a cold request pays.
      'group list miss (listForMember: its snapshot read and the refill)': () =>
        stores.groups.listForMember('alice'),
    });
  }
} finally {
  await other.close();
  await stores.close();
  watch.close();
  rmSync(dir, { recursive: true, force: true });
}
