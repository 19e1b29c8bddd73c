// The group and membership commands of contract §6: group add|update|remove|list, member set|remove.
import { checkGroupFields, isGroupId } from '../groups/import-fields.ts';
import {
  decideMembership,
  type MembershipAction,
  type MembershipRefusal,
  membershipLock,
} from '../groups/membership.ts';
import { CONFLICT, ImportConflictError } from '../store/errors.ts';
import type { Group, MemberStatus } from '../store/group-types.ts';
import { MAX_GROUP_ID } from '../store/limits.ts';
import {
  type Command,
  type CommandContext,
  CommandError,
  parseUsername,
  report,
  UsageError,
} from './command.ts';

const GROUP_OPTIONS = ['id', 'name', 'description', 'short-description', 'activities', 'type'] as const;

function parseId(value: string | undefined, what: string): number {
  const id = value !== undefined && /^[0-9]+$/.test(value) ? Number(value) : Number.NaN;
  if (!isGroupId(id)) throw new UsageError(`${what} must be an integer from 1 to ${MAX_GROUP_ID}`);
  return id;
}

/** A group's fields from --options over an existing group's (update) or from scratch (add). */
function fieldsFromOptions(
  values: Record<string, string | undefined>,
  base: Partial<Omit<Group, 'id'>>,
): Omit<Group, 'id'> {
  const entry: Record<string, unknown> = { ...base };
  if (values['name'] !== undefined) entry['name'] = values['name'];
  if (values['description'] !== undefined) entry['description'] = values['description'];
  if (values['short-description'] !== undefined) entry['short_description'] = values['short-description'];
  if (values['activities'] !== undefined) entry['activities'] = values['activities'];
  if (values['type'] !== undefined)
    entry['type'] = /^[01]$/.test(values['type']) ? Number(values['type']) : values['type'];
  const problems: { path: string; reason: string }[] = [];
  const fields = checkGroupFields(entry, 'group', problems);
  if (fields === null)
    throw new UsageError(
      problems.map((p) => `${p.path.replace('group.', '--').replace('_', '-')} ${p.reason}`).join('; '),
    );
  return fields;
}

function groupLine(group: Group): string {
  return `${group.id}\t${group.type === 1 ? 'classroom' : 'group'}\t${group.name}`;
}

/** A conflict with what is stored (contract §4) is a failure saying why, not a crash. */
async function withConflicts<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ImportConflictError)
      throw new CommandError(err.problems.map((p) => p.reason).join('; '));
    throw err;
  }
}

/** Why the rules refuse, as the command line says it (the API's words, contract §13). */
const REFUSED: Record<MembershipRefusal, string> = {
  'not-administrator': 'not an administrator of the group',
  'not-member': 'no such member',
  'last-administrator': 'a group needs an administrator: make someone else one first (or --force)',
  'directory-managed': "this group's members are managed by the directory",
  'not-a-transition': 'only a member can be made an administrator',
};

/**
 * contract §13: the operator changes a membership through the same rules as the API, in one
 * transaction; `force` only lets the last administrator go. Writes the audit line; answers the
 * status the membership had.
 */
async function changeAsOperator(
  context: CommandContext,
  group: number,
  username: string,
  action: MembershipAction,
  force: boolean,
): Promise<MemberStatus> {
  const stores = await context.stores();
  const done = await stores.groups.changeMembership(
    { group, actor: null, target: username, lock: membershipLock(action) },
    (facts) => decideMembership('operator', action, facts, force),
  );
  if (done === null) throw new CommandError(CONFLICT.noSuchGroup(group));
  if (!done.decision.ok)
    throw new CommandError(`${username} in group ${group}: ${REFUSED[done.decision.refusal]}`);
  if (done.written) {
    context.logger.info(
      {
        audit: 'membership',
        actor: 'clubhouse command',
        group,
        username,
        from: done.facts.targetStatus,
        to: done.status,
        force,
      },
      'membership changed',
    );
  }
  return done.facts.targetStatus;
}

const STATUS_WORDS: Record<string, 0 | 1 | 2> = {
  '0': 0,
  '1': 1,
  '2': 2,
  pending: 0,
  member: 1,
  admin: 2,
  administrator: 2,
};

export const GROUP_COMMANDS: readonly Command[] = [
  {
    name: 'group list',
    usage: 'group list',
    summary: 'List all groups (id, type, name).',
    positionals: 0,
    async run(context) {
      const groups = await (await context.stores()).groups.list();
      report(context, groups, groups.map(groupLine).join('\n') || 'No groups.');
    },
  },
  {
    name: 'group add',
    usage:
      'group add --name NAME [--id ID] [--description TEXT] [--short-description TEXT] [--activities TEXT] [--type 0|1]',
    summary: 'Add a group (the next free id unless --id is given).',
    options: GROUP_OPTIONS,
    positionals: 0,
    async run(context, { values }) {
      const id = values['id'] === undefined ? null : parseId(values['id'], '--id');
      const fields = fieldsFromOptions(values, {});
      const stores = await context.stores();
      // One insert that fails on a taken id or name: two admins never overwrite each other's group.
      const group = await withConflicts(() => stores.groups.addGroup({ id, ...fields }));
      report(context, group, `Added group ${group.id}: ${group.name}`);
    },
  },
  {
    name: 'group update',
    usage:
      'group update ID [--name NAME] [--description TEXT] [--short-description TEXT] [--activities TEXT] [--type 0|1]',
    summary: 'Change some fields of a group.',
    options: GROUP_OPTIONS.filter((option) => option !== 'id'),
    positionals: 1,
    async run(context, { positionals, values }) {
      const stores = await context.stores();
      const id = parseId(positionals[0], 'ID');
      const existing = await stores.groups.detail(id, '');
      if (existing === null) throw new CommandError(CONFLICT.noSuchGroup(id));
      const { member_status: _, id: __, ...base } = existing;
      const group = { id, ...fieldsFromOptions(values, base) };
      await withConflicts(() => stores.groups.upsertGroup(group));
      report(context, group, `Updated group ${group.id}: ${group.name}`);
    },
  },
  {
    name: 'group remove',
    usage: 'group remove ID',
    summary: 'Remove a group and its memberships.',
    positionals: 1,
    async run(context, { positionals }) {
      const id = parseId(positionals[0], 'ID');
      if (!(await (await context.stores()).groups.removeGroup(id)))
        throw new CommandError(CONFLICT.noSuchGroup(id));
      report(context, { removed: id }, `Removed group ${id}.`);
    },
  },
  {
    name: 'member set',
    usage: 'member set GROUP USERNAME STATUS [--force]',
    summary:
      'Set a membership: STATUS 0 (pending), 1 (member) or 2 (administrator). Creates the user if new. Refused for the last administrator (unless --force) and for the members of a group synced from the directory.',
    flags: ['force'],
    positionals: 3,
    async run(context, { positionals, flags }) {
      const group = parseId(positionals[0], 'GROUP');
      const username = parseUsername(positionals[1], context.config);
      const status = STATUS_WORDS[positionals[2] ?? ''];
      if (status === undefined)
        throw new UsageError('STATUS must be 0 (pending), 1 (member) or 2 (administrator)');
      await changeAsOperator(context, group, username, { kind: 'set', status }, flags?.has('force') === true);
      report(context, { group, username, status }, `${username} in group ${group}: status ${status}.`);
    },
  },
  {
    name: 'member remove',
    usage: 'member remove GROUP USERNAME [--force]',
    summary:
      'Remove a membership. Refused for the last administrator (unless --force) and for the members of a group synced from the directory.',
    flags: ['force'],
    positionals: 2,
    async run(context, { positionals, flags }) {
      const group = parseId(positionals[0], 'GROUP');
      const username = parseUsername(positionals[1], context.config);
      const from = await changeAsOperator(
        context,
        group,
        username,
        { kind: 'remove' },
        flags?.has('force') === true,
      );
      if (from === -1) throw new CommandError(`${username} has no membership in group ${group}`);
      report(context, { group, username, removed: true }, `Removed ${username} from group ${group}.`);
    },
  },
];
