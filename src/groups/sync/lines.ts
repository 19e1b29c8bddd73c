// What a group sync run prints and logs (contract §11): the counts, then every change one line each,
// in a stable order, so that a dry run prints exactly what the real run then does.
import { FIELDS, type SyncCounts, type SyncPlan } from './plan.ts';

/** The counts as one sentence (what every run prints and logs). */
export function countsText(counts: SyncCounts): string {
  const c = counts;
  return [
    `groups: ${c.groupsAdded} added, ${c.groupsChanged} changed, ${c.groupsRemoved} removed, ${c.groupsKept} kept`,
    `memberships: ${c.membershipsAdded} added, ${c.membershipsChanged} changed, ${c.membershipsRemoved} removed`,
    `users: ${c.usersCreated} created`,
    `skipped: ${c.skipped}`,
  ].join('; ');
}

/** Every change of the plan, one line each, in a stable order: what a run prints (a dry run too). */
export function planLines(plan: SyncPlan): string[] {
  const lines = [countsText(plan.counts)];
  const { writes } = plan;
  for (const group of writes.addGroups)
    lines.push(`group added ${group.id} ${JSON.stringify(group.name)} (${group.externalId})`);
  for (const group of writes.changeGroups) {
    const was = plan.before.get(group.id);
    const fields = FIELDS.filter((field) => was === undefined || was[field] !== group[field]);
    const rename = was !== undefined && was.name !== group.name ? ` (was ${JSON.stringify(was.name)})` : '';
    lines.push(`group changed ${group.id} ${JSON.stringify(group.name)}${rename}: ${fields.join(', ')}`);
  }
  for (const group of plan.removed) lines.push(`group removed ${group.id} ${JSON.stringify(group.name)}`);
  for (const group of plan.kept)
    lines.push(`group kept ${group.id} ${JSON.stringify(group.name)} (gone from the directory)`);
  for (const username of writes.createUsers) lines.push(`user created ${username}`);
  for (const m of writes.addMemberships) lines.push(`membership added ${m.group} ${m.username} ${m.status}`);
  for (const m of plan.membershipChanges)
    lines.push(`membership changed ${m.group} ${m.username} ${m.from} -> ${m.status}`);
  for (const m of writes.removeMemberships)
    lines.push(`membership removed ${m.group} ${m.username} ${m.status}`);
  for (const skip of plan.skipped)
    lines.push(
      `skipped ${skip.entry}${skip.value === null ? '' : ` ${JSON.stringify(skip.value)}`}: ${skip.reason}`,
    );
  return lines;
}
