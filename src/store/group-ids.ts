// Which id a group new to clubhouse takes (contract §11), in one place for every writer that picks
// one: `clubhouse group add` without --id (sql/groups.ts) and the group sync (groups/sync/plan.ts).
// The import never picks: its file names every id (contract §4).
import { MAX_GROUP_ID } from './limits.ts';

/**
 * The ids `count` new groups take, one after another, given every id in use (ascending, each once):
 * each takes the lowest unused id above every id in use, or, once the top of the range (2^31−1) is
 * taken, the lowest unused one anywhere. So an imported group at the top of the range never stops
 * groups from being added; null only when fewer than `count` ids are left (contract §11: that run
 * fails, writing nothing).
 */
export function freeGroupIds(inUse: readonly number[], count: number): number[] | null {
  const ids: number[] = [];
  const used = inUse.length;
  const largest = used === 0 ? 0 : inUse[used - 1]!;
  for (let id = largest + 1; id <= MAX_GROUP_ID && ids.length < count; id++) ids.push(id);
  // The top is taken: the unused ids below the largest, lowest first. Below inUse[i] lie
  // inUse[i] − 1 − i unused ids, a count that never decreases with i; so the k-th unused id is
  // k + i for the first i whose count reaches k, found by halving (a table of any size, at once).
  const unusedBelow = (i: number) => inUse[i]! - 1 - i;
  for (let k = 1; ids.length < count; k++) {
    if (used === 0 || k > unusedBelow(used - 1)) return null;
    let low = 0;
    let high = used - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (unusedBelow(middle) >= k) high = middle;
      else low = middle + 1;
    }
    ids.push(k + low);
  }
  return ids;
}
