// The group sync's mark (store/sql/group-sync-mark.ts) is recorded after planning again against
// stateAfter(state, writes) rather than reading every membership back: that is sound only if it is
// exactly what the store then holds. On every store: groups added, changed and removed (their
// memberships with them), memberships removed, changed and added (one onto a pair that exists),
// users created, a group created in clubhouse left alone; then the state read back.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type GroupSyncState,
  type GroupSyncWrites,
  NO_WRITES,
  type SyncedGroup,
} from '../../src/store/group-sync-types.ts';
import { stateAfter } from '../../src/store/sql/group-sync-mark.ts';
import type { Stores } from '../../src/store/types.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';

const group = (id: number, name: string, externalId: string): SyncedGroup => ({
  id,
  name,
  description: `${name} described`,
  short_description: '',
  activities: '',
  type: 0,
  externalId,
});

/** The state as the store reads it, in a form two states compare in. */
function comparable(state: GroupSyncState) {
  return {
    synced: state.synced.map((g) => ({ ...g })),
    localNames: [...state.localNames].sort(),
    memberships: [...state.memberships].map((m) => `${m.group} ${m.username} ${m.status}`).sort(),
    users: [...state.users].sort(),
    ids: [...state.ids],
  };
}

describeEachStore('the state after a sync writes, as the mark assumes it', (store) => {
  let made: StoreData;
  let stores: Stores;
  const usernames = ['ann', 'ben', 'cat', 'dan', 'eve'];

  /** One transaction through the sync's own seam: writes `writes`, answers the state it read. */
  async function apply(writes: GroupSyncWrites): Promise<GroupSyncState> {
    let read: GroupSyncState | undefined;
    await stores.groupSync.apply(
      () => usernames,
      (state) => {
        read = state;
        return { writes };
      },
      { write: writes !== NO_WRITES, lease: null, shortcut: null },
    );
    assert.ok(read);
    return read;
  }

  before(async () => {
    made = await store.create();
    stores = await made.open();
  });
  after(async () => {
    await stores?.close();
    await made?.drop();
  });

  test('stateAfter is what the store reads back after writing', async () => {
    const local = await stores.groups.addGroup({
      id: null,
      name: 'Ours',
      description: '',
      short_description: '',
      activities: '',
      type: 0,
    });
    await apply({
      ...NO_WRITES,
      addGroups: [group(10, 'Chess', 'id-10'), group(11, 'Drama', 'id-11'), group(12, 'Leaving', 'id-12')],
      createUsers: ['ann', 'ben', 'cat'],
      addMemberships: [
        { group: 10, username: 'ann', status: 1 },
        { group: 10, username: 'ben', status: 0 },
        { group: 11, username: 'cat', status: 2 },
        { group: 12, username: 'ann', status: 1 },
      ],
    });
    await stores.groups.setMembership({ group: local.id, username: 'ann', status: 1 });
    const before = await apply(NO_WRITES);
    const writes: GroupSyncWrites = {
      removeGroups: [12],
      changeGroups: [{ ...group(11, 'Theatre', 'id-11'), type: 1 }],
      addGroups: [group(13, 'Fresh', 'id-13')],
      createUsers: ['dan'],
      removeMemberships: [{ group: 11, username: 'cat', status: 2 }],
      changeMemberships: [{ group: 10, username: 'ann', status: 2 }],
      addMemberships: [
        { group: 10, username: 'ben', status: 1 },
        { group: 13, username: 'dan', status: 1 },
        { group: 11, username: 'ann', status: 1 },
      ],
    };
    await apply(writes);
    assert.deepEqual(comparable(await apply(NO_WRITES)), comparable(stateAfter(before, writes)));
  });
});
