// The group memory keeps each group's JSON once: a kept list holds its groups' bytes, and a group
// read by a kept list reads them from there (the arena's copy is let go). These tests drive
// GroupMemory alone (no store): every answer it gives is compared with the JSON written afresh from
// what was last kept, through lists built, rebuilt, dropped and replaced, and the bytes it holds are
// weighed after a collection.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { GROUP_JSON } from '../../src/groups/json.ts';
import { AnswerWindow } from '../../src/store/freshness/gate.ts';
import { GROUP_MEMORY_LIMITS, GroupMemory } from '../../src/store/freshness/group-memory.ts';
import type { Group, JsonBytes, MemberStatus } from '../../src/store/group-types.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** ArrayBuffer bytes after a full collection (their backing stores are freed off the main thread). */
async function arrayBufferBytes(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await setTimeout(20);
  }
  return process.memoryUsage().arrayBuffers;
}

const text = (json: JsonBytes | undefined) =>
  json === undefined ? undefined : typeof json === 'string' ? json : json.toString('utf8');

/** Group `id` in version `v`: ASCII, or (odd versions of even ids) with characters beyond it. */
const groupOf = (id: number, v: number): Group => ({
  id,
  name: v % 2 === 1 && id % 2 === 0 ? `Café ${id}.${v} ✓` : `Group ${id}.${v}`,
  description: `about ${id}, version ${v}`,
  short_description: '',
  activities: 'x'.repeat((id * 7 + v) % 13),
  type: 0,
});

function open(): { memory: GroupMemory; window: AnswerWindow } {
  const window = new AnswerWindow();
  window.open = true;
  return { memory: new GroupMemory(GROUP_JSON, window), window };
}

describe('the group memory holds a group’s JSON once', () => {
  test('answers stay exact while lists are built, rebuilt and dropped (against a model)', () => {
    const users = ['ann', 'ben', 'cat', 'dan'];
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('user' as const),
        user: fc.integer({ min: 0, max: users.length - 1 }),
        groups: fc.uniqueArray(fc.integer({ min: 1, max: 8 }), { maxLength: 6 }),
        statuses: fc.array(fc.constantFrom<MemberStatus>(0, 1, 2), { minLength: 6, maxLength: 6 }),
        version: fc.integer({ min: 0, max: 3 }),
      }),
      fc.record({
        kind: fc.constant('group' as const),
        id: fc.integer({ min: 1, max: 8 }),
        version: fc.integer({ min: 0, max: 3 }),
      }),
      fc.record({ kind: fc.constant('list' as const), user: fc.integer({ min: 0, max: users.length - 1 }) }),
      fc.record({
        kind: fc.constant('detail' as const),
        user: fc.integer({ min: 0, max: users.length - 1 }),
        id: fc.integer({ min: 1, max: 8 }),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const { memory } = open();
        // The model: each group's last kept version, each user's last kept memberships.
        const groups = new Map<number, Group>();
        const members = new Map<string, { id: number; status: MemberStatus }[]>();
        let generation = 0;
        for (const o of ops) {
          generation++;
          if (o.kind === 'user') {
            const rows = [...o.groups]
              .sort((a, b) => a - b)
              .map((id, i) => ({ group: groupOf(id, o.version), status: o.statuses[i]! }));
            memory.keepUser(users[o.user]!, rows, generation);
            for (const { group } of rows) groups.set(group.id, group);
            members.set(
              users[o.user]!,
              rows.map(({ group, status }) => ({ id: group.id, status })),
            );
          } else if (o.kind === 'group') {
            memory.keepGroup(groupOf(o.id, o.version), generation);
            groups.set(o.id, groupOf(o.id, o.version));
          } else if (o.kind === 'list') {
            const kept = members.get(users[o.user]!);
            const want =
              kept === undefined
                ? undefined
                : text(
                    GROUP_JSON.list(
                      kept
                        .filter(({ status }) => status !== 0)
                        .map(({ id }) => GROUP_JSON.group(groups.get(id)!)),
                    ),
                  );
            // Twice: the second answer is the kept list's.
            assert.equal(text(memory.list(users[o.user]!)), want);
            assert.equal(text(memory.list(users[o.user]!)), want);
          } else {
            const kept = members.get(users[o.user]!);
            const group = groups.get(o.id);
            const want =
              kept === undefined || group === undefined
                ? undefined
                : text(
                    GROUP_JSON.detail(
                      GROUP_JSON.group(group),
                      kept.find(({ id }) => id === o.id)?.status ?? -1,
                    ),
                  );
            assert.equal(text(memory.detail(o.id, users[o.user]!)), want);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  test('10 000 kept lists of 20 groups hold about the lists’ bytes, not the groups’ besides', async () => {
    const { memory } = open();
    const users = 10_000;
    const before = await arrayBufferBytes();
    let listBytes = 0;
    for (let u = 0; u < users; u++) {
      const rows = Array.from({ length: 20 }, (_, k) => ({
        group: { ...groupOf(((u * 7919 + k * 5000) % 100_000) + 1, 0), short_description: 'y'.repeat(160) },
        status: 1 as MemberStatus,
      })).sort((a, b) => a.group.id - b.group.id);
      memory.keepUser(`user${u}`, rows, 1);
      listBytes += memory.list(`user${u}`)!.length;
    }
    const held = (await arrayBufferBytes()) - before;
    // Kept apart as well, the groups' JSON added half as much again to the lists’ bytes (measured: 1.52×).
    assert.ok(listBytes > 40 * 1024 * 1024, `${listBytes}`);
    assert.ok(held < listBytes * 1.1, `held ${held} bytes for ${listBytes} bytes of lists`);
    assert.ok(GROUP_MEMORY_LIMITS.listBytes >= listBytes);
    // Still kept (and so still held while weighed).
    assert.ok(memory.list('user0') !== undefined);
  });
});
