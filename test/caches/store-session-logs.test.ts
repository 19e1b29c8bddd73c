// The deletion logs that keep the session memories of PostgreSQL and Redis exact, at their edges
// (docs/freshness.md): an instance whose position in the log was purged or trimmed away, a TRUNCATE,
// a Redis that lost its log or its state. In each case the instance cannot know what was deleted, so
// it must forget every session it kept; a session it kept must never be answered from memory after.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SERVING_MEMORY } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { openStores } from '../../src/store/open.ts';
import type { Stores } from '../../src/store/types.ts';
import { pgPool, redisClient } from '../helpers/engines.ts';
import { type StoreData, storeOf } from '../helpers/stores.ts';

const DAY = 86_400_000;
const idOf = (name: string) => Buffer.from(name.padEnd(32, '.'));

for (const kind of ['postgres', 'redis-postgres'] as const) {
  describe(`the session deletion log at its edges [${storeOf(kind).name}]`, () => {
    let data: StoreData;
    let writer: Stores;
    let reader: Stores;
    before(async () => {
      data = await storeOf(kind).create();
      writer = await data.open();
      reader = await openStores(loadConfig(data.env).store, { memory: SERVING_MEMORY });
      await writer.users.recordLogin('alice', Date.now(), true);
    });
    after(async () => {
      await reader?.close();
      await writer?.close();
      await data?.drop();
    });

    const start = (name: string) =>
      writer.sessions.create(
        {
          idHash: idOf(name),
          username: 'alice',
          createdAt: Date.now(),
          expiresAt: Date.now() + DAY,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
    /** The reader's answer from memory after a catch-up (undefined: not in memory). */
    const fromMemory = async (name: string) => {
      await reader.freshness.catchUp(['sessions']);
      const sessions = reader.memory.sessions;
      assert.ok(sessions !== null);
      return reader.freshness.answerFromMemory(
        () => sessions.answer(idOf(name).toString('hex'), Date.now()),
        ['sessions'],
      )?.username;
    };
    /** The reader keeps `name` in memory (a catch-up, then a read from the store). */
    const keep = async (name: string) => {
      await reader.freshness.catchUp(['sessions']);
      assert.equal((await reader.sessions.get(idOf(name), Date.now()))?.username, 'alice');
      assert.equal(await fromMemory(name), 'alice', `${name} is kept`);
    };
    const sql = (text: string) => pgPool(writer).query(text);
    const redis = () => redisClient(writer);

    test('a deletion is read from the log; the others stay in memory', async () => {
      await start('x1');
      await start('x2');
      await keep('x1');
      await keep('x2');
      await writer.sessions.delete(idOf('x1'));
      assert.equal(await fromMemory('x1'), undefined);
      assert.equal(await fromMemory('x2'), 'alice');
    });

    test('entries the reader never read were purged or trimmed: it forgets everything', async () => {
      await start('y1');
      await start('y2');
      await keep('y1');
      await keep('y2');
      await writer.sessions.delete(idOf('y1'));
      if (kind === 'postgres') await sql('DELETE FROM session_deletions');
      else await redis().del(`${data.env['REDIS_KEY_PREFIX']}session-log`);
      assert.equal(await fromMemory('y1'), undefined, 'the deleted session');
      assert.equal(await fromMemory('y2'), undefined, 'every other one too');
    });

    test('the log started over (TRUNCATE, or Redis lost its state): it forgets everything', async () => {
      await start('z1');
      await keep('z1');
      if (kind === 'postgres') await sql('TRUNCATE sessions');
      else await redis().del(`${data.env['REDIS_KEY_PREFIX']}session-log-state`);
      assert.equal(await fromMemory('z1'), undefined);
    });

    test('the entry where the reader stands is not the one it read (a restore that logged as many again): it forgets everything', async () => {
      await start('w1');
      await start('w2');
      await keep('w1');
      await keep('w2');
      await writer.sessions.delete(idOf('w1'));
      assert.equal(await fromMemory('w1'), undefined);
      assert.equal(await fromMemory('w2'), 'alice', 'the reader stands at the deletion of w1');
      // The log's newest entry, where the reader stands, replaced: its seq unchanged, its mark not.
      if (kind === 'postgres')
        await sql(`UPDATE session_deletions SET id_hash = decode(repeat('00', 32), 'hex')
          WHERE seq = (SELECT seq FROM session_log_head)`);
      else await redis().lset(`${data.env['REDIS_KEY_PREFIX']}session-log`, -1, '0'.repeat(64));
      assert.equal(await fromMemory('w2'), undefined);
    });

    test('a sighting is not a change: the session stays in every memory, and goes with the session', async () => {
      await start('s1');
      await keep('s1');
      const seenAt = Date.now();
      await writer.sessions.touch([{ idHash: idOf('s1'), at: seenAt }]);
      assert.equal(await fromMemory('s1'), 'alice', 'still answered from memory');
      const listed = (await writer.sessions.list('alice', Date.now())).find((s) =>
        s.idHash.equals(idOf('s1')),
      );
      assert.equal(listed?.lastSeen, seenAt);
      await writer.sessions.delete(idOf('s1'));
      assert.equal(await fromMemory('s1'), undefined);
      if (kind === 'redis-postgres') {
        const seenKey = `${data.env['REDIS_KEY_PREFIX']}session-seen:${idOf('s1').toString('hex')}`;
        assert.equal(await redis().exists(seenKey), 0, 'its last sighting is deleted with it');
      }
    });

    test('the cap of contract §9 and a revoke are logged like a logout', async () => {
      await writer.sessions.revokeUser('alice');
      await start('c0');
      await keep('c0');
      for (let i = 1; i < 100; i++) await start(`c${i}`);
      await keep('c1');
      await start('c100');
      assert.equal(await fromMemory('c0'), undefined, 'the oldest ended by the cap');
      assert.equal(await fromMemory('c1'), 'alice');
      await writer.sessions.revokeUser('alice');
      assert.equal(await fromMemory('c1'), undefined, 'revoked');
    });
  });
}
