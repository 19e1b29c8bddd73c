// Names in the group sync (contract §11): group names are unique, groups created in clubhouse never
// give theirs up, and a synced group left as it is keeps its own. Which directory group gets which
// name when they collide is decided here, in an order that does not depend on the directory's.
import type { DirectorySkip } from '../../backends/ldap/groups/records.ts';
import type { SyncedGroup } from '../../store/group-sync-types.ts';
import type { WantedGroup } from './prepare.ts';

/**
 * Decides which directory groups get which name: a group whose name is a local group's, or another
 * directory group's (the first by clubhouse id, then by identity, wins), is skipped; a skipped synced
 * group keeps its current name, which may in turn push out a group that wanted it. Repeated until
 * nothing more is pushed out.
 */
export function assignNames(
  wanted: readonly WantedGroup[],
  existing: ReadonlyMap<string, SyncedGroup>,
  reserved: ReadonlySet<string>,
  skipped: DirectorySkip[],
): Set<string> {
  const failed = new Map<string, string>();
  for (;;) {
    const taken = new Set(reserved);
    for (const group of wanted) {
      const current = existing.get(group.externalId);
      if (failed.has(group.externalId) && current !== undefined) taken.add(current.name);
    }
    let more = false;
    const claimed = new Map<string, string>();
    for (const group of wanted) {
      if (failed.has(group.externalId)) continue;
      const name = group.fields.name;
      const reason = reserved.has(name)
        ? `the name "${name}" is taken by a group created in clubhouse or kept as it is`
        : taken.has(name)
          ? `the name "${name}" is kept by a synced group left as it is`
          : claimed.has(name)
            ? `the name "${name}" is also the name of ${claimed.get(name)}`
            : null;
      if (reason !== null) {
        failed.set(group.externalId, reason);
        more = true;
      } else claimed.set(name, group.dn);
    }
    if (!more) break;
  }
  for (const group of wanted) {
    const reason = failed.get(group.externalId);
    if (reason !== undefined) skipped.push({ entry: group.dn, value: null, reason });
  }
  return new Set(failed.keys());
}
