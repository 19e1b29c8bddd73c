// The admin commands of contract §6. Each parses its own arguments and talks to the stores only.
import { readFileSync } from 'node:fs';
import type { Config } from '../config.ts';
import { configReport } from '../config-report.ts';
import { applyImport, checkGroupFields, checkUsername, isGroupId } from '../import.ts';
import { ImportConflictError } from '../store/conflicts.ts';
import { MAX_GROUP_ID } from '../store/limits.ts';
import { migrateStores } from '../store/open.ts';
import type { Group, Stores } from '../store/types.ts';
import { disableUser, enableUser, revokeSessions } from '../users.ts';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export class CommandError extends Error {
  override readonly name = 'CommandError';
}

export interface CommandContext {
  readonly config: Config;
  readonly stores: () => Promise<Stores>;
  readonly json: boolean;
  readonly out: (text: string) => void;
  readonly now: () => number;
}

export interface Command {
  /** e.g. `group add`. */
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  /** Options taking a value (string); `--json` and `--help` are always accepted. */
  readonly options?: readonly string[];
  readonly positionals: number;
  run(
    context: CommandContext,
    args: { positionals: string[]; values: Record<string, string | undefined> },
  ): Promise<void>;
}

const GROUP_OPTIONS = ['id', 'name', 'description', 'short-description', 'activities', 'type'] as const;

function parseId(value: string | undefined, what: string): number {
  const id = value !== undefined && /^[0-9]+$/.test(value) ? Number(value) : Number.NaN;
  if (!isGroupId(id)) throw new UsageError(`${what} must be an integer from 1 to ${MAX_GROUP_ID}`);
  return id;
}

function parseUsername(value: string | undefined, config: Config): string {
  const checked = checkUsername(value, config.usernameCase);
  if ('reason' in checked) throw new UsageError(`USERNAME ${checked.reason}`);
  return checked.username;
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

async function withConflicts<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ImportConflictError)
      throw new CommandError(err.problems.map((p) => p.reason).join('; '));
    throw err;
  }
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

export const COMMANDS: readonly Command[] = [
  {
    name: 'config check',
    usage: 'config check',
    summary: 'Print the effective settings (secrets masked) and warnings; exit 2 when a setting is invalid.',
    positionals: 0,
    async run(context) {
      const { settings, warnings } = configReport(context.config);
      if (context.json) {
        context.out(JSON.stringify({ settings, warnings }));
        return;
      }
      const width = Math.max(...Object.keys(settings).map((name) => name.length));
      const lines = Object.entries(settings).map(([name, value]) => `${name.padEnd(width)}  ${value}`);
      context.out(
        [
          ...lines,
          '',
          ...(warnings.length === 0 ? ['No warnings.'] : warnings.map((w) => `warning: ${w}`)),
        ].join('\n'),
      );
    },
  },
  {
    name: 'migrate',
    usage: 'migrate',
    summary: 'Create or upgrade the database schema (the server also does this at start-up).',
    positionals: 0,
    async run(context) {
      const applied = await migrateStores(context.config);
      context.out(
        context.json
          ? JSON.stringify({ applied })
          : applied.length === 0
            ? 'Database is up to date.'
            : `Applied migrations: ${applied.join(', ')}.`,
      );
    },
  },
  {
    name: 'import',
    usage: 'import FILE',
    summary:
      'Apply an import file (JSON, contract §4) in one transaction; idempotent. "-" reads standard input.',
    positionals: 1,
    async run(context, { positionals }) {
      const file = positionals[0] ?? '-';
      let text: string;
      try {
        text = readFileSync(file === '-' ? 0 : file, 'utf8');
      } catch (err) {
        throw new CommandError(`cannot read ${file}: ${(err as Error).message}`);
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (err) {
        throw new CommandError(`${file} is not JSON: ${(err as Error).message}`);
      }
      const outcome = await applyImport(await context.stores(), json, context.config.usernameCase);
      if (outcome.ok) {
        const { groups, users, memberships } = outcome.counts;
        context.out(
          context.json
            ? JSON.stringify({ ok: true, ...outcome.counts })
            : `Imported ${groups} groups, ${users} users, ${memberships} memberships.`,
        );
        return;
      }
      const { problems } = outcome;
      if (context.json) context.out(JSON.stringify({ ok: false, problems }));
      const lines = problems.map((p) => `  ${p.path}: ${p.reason}`).join('\n');
      throw new CommandError(
        `${file} has ${problems.length} bad ${problems.length === 1 ? 'entry' : 'entries'}; nothing was changed:\n${lines}`,
      );
    },
  },
  {
    name: 'export',
    usage: 'export',
    summary: 'Print every group, user and membership in the import format.',
    positionals: 0,
    async run(context) {
      context.out(JSON.stringify(await (await context.stores()).groups.exportData(), null, 2));
    },
  },
  {
    name: 'group list',
    usage: 'group list',
    summary: 'List all groups (id, type, name).',
    positionals: 0,
    async run(context) {
      const groups = await (await context.stores()).groups.list();
      context.out(context.json ? JSON.stringify(groups) : groups.map(groupLine).join('\n') || 'No groups.');
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
      context.out(context.json ? JSON.stringify(group) : `Added group ${group.id}: ${group.name}`);
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
      if (existing === null) throw new CommandError(`no group with id ${id}`);
      const { member_status: _, id: __, ...base } = existing;
      const group = { id, ...fieldsFromOptions(values, base) };
      await withConflicts(() => stores.groups.upsertGroup(group));
      context.out(context.json ? JSON.stringify(group) : `Updated group ${group.id}: ${group.name}`);
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
        throw new CommandError(`no group with id ${id}`);
      context.out(context.json ? JSON.stringify({ removed: id }) : `Removed group ${id}.`);
    },
  },
  {
    name: 'member set',
    usage: 'member set GROUP USERNAME STATUS',
    summary:
      'Set a membership: STATUS 0 (pending), 1 (member) or 2 (administrator). Creates the user if new.',
    positionals: 3,
    async run(context, { positionals }) {
      const group = parseId(positionals[0], 'GROUP');
      const username = parseUsername(positionals[1], context.config);
      const status = STATUS_WORDS[positionals[2] ?? ''];
      if (status === undefined)
        throw new UsageError('STATUS must be 0 (pending), 1 (member) or 2 (administrator)');
      await withConflicts(async () =>
        (await context.stores()).groups.setMembership({ group, username, status }),
      );
      context.out(
        context.json
          ? JSON.stringify({ group, username, status })
          : `${username} in group ${group}: status ${status}.`,
      );
    },
  },
  {
    name: 'member remove',
    usage: 'member remove GROUP USERNAME',
    summary: 'Remove a membership.',
    positionals: 2,
    async run(context, { positionals }) {
      const group = parseId(positionals[0], 'GROUP');
      const username = parseUsername(positionals[1], context.config);
      if (!(await (await context.stores()).groups.removeMembership(group, username))) {
        throw new CommandError(`${username} has no membership in group ${group}`);
      }
      context.out(
        context.json
          ? JSON.stringify({ group, username, removed: true })
          : `Removed ${username} from group ${group}.`,
      );
    },
  },
  {
    name: 'user list',
    usage: 'user list',
    summary: 'List users with their active flag and last login.',
    positionals: 0,
    async run(context) {
      const users = await (await context.stores()).users.list();
      const iso = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString());
      context.out(
        context.json
          ? JSON.stringify(users)
          : users
              .map(
                (u) => `${u.username}\t${u.active ? 'active' : 'disabled'}\tlast login ${iso(u.lastLoginAt)}`,
              )
              .join('\n') || 'No users.',
      );
    },
  },
  {
    name: 'user disable',
    usage: 'user disable USERNAME',
    summary: 'Disable a user: refused at login, and every session of theirs ends now.',
    positionals: 1,
    async run(context, { positionals }) {
      const username = parseUsername(positionals[0], context.config);
      const result = await disableUser(await context.stores(), username);
      if (result === null) throw new CommandError(`no user ${username}`);
      context.out(
        context.json
          ? JSON.stringify({ username, ...result })
          : `Disabled ${username}; ended ${result.revoked} sessions.`,
      );
    },
  },
  {
    name: 'user enable',
    usage: 'user enable USERNAME',
    summary: 'Enable a user again (sessions ended by the disable stay ended).',
    positionals: 1,
    async run(context, { positionals }) {
      const username = parseUsername(positionals[0], context.config);
      if (!(await enableUser(await context.stores(), username)))
        throw new CommandError(`no user ${username}`);
      context.out(context.json ? JSON.stringify({ username, active: true }) : `Enabled ${username}.`);
    },
  },
  {
    name: 'sessions purge-expired',
    usage: 'sessions purge-expired',
    summary: 'Delete expired sessions (the server also does this every 10 minutes).',
    positionals: 0,
    async run(context) {
      const purged = await (await context.stores()).sessions.purgeExpired(context.now());
      context.out(context.json ? JSON.stringify({ purged }) : `Deleted ${purged} expired sessions.`);
    },
  },
  {
    name: 'sessions revoke',
    usage: 'sessions revoke USERNAME',
    summary: 'Log a user out everywhere, without disabling them.',
    positionals: 1,
    async run(context, { positionals }) {
      const username = parseUsername(positionals[0], context.config);
      const revoked = await revokeSessions(await context.stores(), username);
      context.out(
        context.json ? JSON.stringify({ username, revoked }) : `Ended ${revoked} sessions of ${username}.`,
      );
    },
  },
];
