// What a process answers from memory, asked as its routes ask: a catch-up through the freshness gate,
// then the memory (undefined: not kept, or no such memory).
import type { JsonBytes } from '../../src/store/group-types.ts';
import type { Stores } from '../../src/store/types.ts';

/** GET /api/group/ for `username` from memory. */
export async function groupListFromMemory(stores: Stores, username: string): Promise<JsonBytes | undefined> {
  await stores.freshness.catchUp(['groups']);
  return stores.freshness.answerFromMemory(() => stores.memory.groups?.list(username), ['groups']);
}
