// last_seen recording (contract §9): sightings are noted in memory and written in short batches off
// the request's path; a failed write is reported and retried at the next sighting, never lost silently.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { FLUSH_BATCH, LastSeen, RECORD_INTERVAL_MS } from '../../src/auth/last-seen.ts';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { openSqliteStores } from '../../src/store/sqlite/store.ts';
import type { SessionSighting, Stores } from '../../src/store/types.ts';

let dir: string;
let stores: Stores;
const now = Date.now();
const idOf = (i: number) =>
  Buffer.alloc(32, 0)
    .fill(i & 0xff, 0, 1)
    .fill((i >> 8) & 0xff, 1, 2);

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'clubhouse-last-seen-'));
  stores = openSqliteStores(join(dir, 'db.sqlite'));
  await stores.users.recordLogin('alice', now, true);
  for (let i = 0; i < 1200; i++)
    await stores.sessions.create(
      {
        idHash: idOf(i),
        username: 'alice',
        createdAt: now,
        expiresAt: now + 86_400_000,
        clientIp: null,
        userAgent: null,
      },
      2000,
    );
});
after(async () => {
  await stores.close();
  rmSync(dir, { recursive: true, force: true });
});

test('1 200 sessions seen are written in batches of FLUSH_BATCH, each once per interval', async () => {
  const calls: number[] = [];
  const store = {
    ...stores.sessions,
    touch: (sightings: readonly SessionSighting[]) => {
      calls.push(sightings.length);
      return stores.sessions.touch(sightings);
    },
  };
  const errors: unknown[] = [];
  const seen = new LastSeen(
    store,
    () => now,
    (err) => errors.push(err),
  );
  for (let round = 0; round < 3; round++)
    for (let i = 0; i < 1200; i++) seen.note(idOf(i), now + 1000 + round);
  await seen.flush(now + 2000);
  assert.deepEqual(calls, [FLUSH_BATCH, FLUSH_BATCH, 1200 - 2 * FLUSH_BATCH]);
  const listed = await stores.sessions.list('alice', now);
  assert.equal(listed.length, 1200);
  assert.ok(
    listed.every((s) => s.lastSeen === now + 1000),
    'the first sighting of the interval',
  );
  await seen.flush(now + 3000);
  assert.equal(calls.length, 3, 'nothing more to write');
  seen.note(idOf(1), now + 1000 + RECORD_INTERVAL_MS);
  await seen.close();
  assert.deepEqual(calls.slice(3), [1], 'the next interval writes again; close writes what is left');
  assert.deepEqual(errors, []);
});

test('a failed write is reported, and the sessions are written at their next sighting', async () => {
  let failing = true;
  const store = {
    ...stores.sessions,
    touch: (sightings: readonly SessionSighting[]) =>
      failing ? Promise.reject(new StoreUnavailableError('sessions')) : stores.sessions.touch(sightings),
  };
  const errors: unknown[] = [];
  const seen = new LastSeen(
    store,
    () => now,
    (err) => errors.push(err),
  );
  seen.note(idOf(7), now + 50_000);
  await seen.flush(now + 50_000);
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof StoreUnavailableError);
  failing = false;
  seen.note(idOf(7), now + 51_000);
  await seen.close();
  const listed = await stores.sessions.list('alice', now);
  assert.equal(listed.find((s) => s.idHash.equals(idOf(7)))?.lastSeen, now + 51_000);
});
