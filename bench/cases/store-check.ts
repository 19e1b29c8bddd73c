// A microbenchmark of the store's part of the hot paths, before/after in one process:
// the session cache's answer as the raw check path asks it, with "anything committed?" asked of
// PRAGMA data_version on every call (before: unwatched()) or of the WAL-index header (after:
// watchCommits), in alternating rounds so that a busy machine weighs on both alike; then the group
// cache's answers. A second connection on the same file commits now and then in the last case, as
// another worker would. `node --disable-warning=ExperimentalWarning bench/cases/store-check.ts`
// prints µs per call.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSessionId } from '../../src/auth/sessions.ts';
import { GROUP_JSON } from '../../src/groups/json.ts';
import { hasGroupCache } from '../../src/store/group-types.ts';
import { unwatched, watchCommits } from '../../src/store/sqlite/commit-watch.ts';
import { call } from '../../src/store/sqlite/driver.ts';
import { cachedSqliteSessions } from '../../src/store/sqlite/sessions.ts';
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

const dir = mkdtempSync(join(tmpdir(), 'clubhouse-store-check-'));
const path = join(dir, 'db.sqlite');
const stores = openSqliteStores(path, { groupJson: GROUP_JSON });
const other = openSqliteStores(path, { migrate: false });
const watch = watchCommits(stores.db);
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
  const before = cachedSqliteSessions(stores.db, call, unwatched());
  const after = cachedSqliteSessions(stores.db, call, watch);
  await before.get(idHash, now);
  await after.get(idHash, now);
  if (before.peek(key, now)?.username !== 'alice' || after.peek(key, now)?.username !== 'alice')
    throw new Error('the sessions are not cached');
  race({
    'session peek, before (data_version every call)': () => before.peek(key, now),
    'session peek, after (WAL-index header)': () => after.peek(key, now),
  });
  // Another connection commits (a login elsewhere) before every 100th call: the slow path's share.
  const touch = other.db.prepare('UPDATE sessions SET last_seen = ? WHERE id_hash = ?');
  let n = 0;
  const committing = (peek: () => unknown) => () => {
    if (++n % 100 === 0) touch.run(n, idHash);
    return peek();
  };
  race({
    'session peek + a commit elsewhere every 100 calls, before': committing(() => before.peek(key, now)),
    'session peek + a commit elsewhere every 100 calls, after': committing(() => after.peek(key, now)),
  });
  const cache = stores.groups;
  if (hasGroupCache(cache)) {
    await cache.listForMember('alice');
    await cache.detail(7, 'alice');
    const list = cache.peekList('alice');
    if (list === undefined || cache.peekDetail(7, 'alice') === undefined) throw new Error('not cached');
    race({
      [`group list peek (20 groups, ${list.length} bytes)`]: () => cache.peekList('alice'),
      'group detail peek': () => cache.peekDetail(7, 'alice'),
      // Synchronous under the promise: the read snapshot and the refill a cold request pays.
      'group list miss (listForMember: its snapshot read and the refill)': () => cache.listForMember('alice'),
    });
  }
} finally {
  await other.close();
  await stores.close();
  watch.close();
  rmSync(dir, { recursive: true, force: true });
}
