// The admin commands of contract §6. Each parses its own arguments and talks to the stores only;
// the group and membership ones are in group-commands.ts.
import { readFileSync } from 'node:fs';
import { Sessions, type SessionView, sharedSecret } from '../auth/sessions.ts';
import { findingText, migrateUsernames } from '../auth/username-migration.ts';
import { disableUser, enableUser, mergeUser, revokeSessions } from '../auth/users.ts';
import { configReport } from '../config/report.ts';
import { applyImport } from '../groups/import.ts';
import { migrateStores } from '../store/open.ts';
import type { Stores } from '../store/types.ts';
import { type Command, CommandError, knownUser, parseUsername, report, UsageError } from './command.ts';
import { GROUP_COMMANDS } from './group-commands.ts';
import { PASSKEY_COMMANDS } from './passkey-commands.ts';
import { sessionStoreReport, sessionStoreWarnings } from './session-store-report.ts';
import { SYNC_COMMANDS } from './sync-commands.ts';
import { storedUsernameReport, usernameWarnings } from './username-report.ts';

/** A command on one USERNAME; `act` answers what to print with it, or null when there is no such user. */
function userCommand<R extends object>(
  name: string,
  summary: string,
  act: (stores: Stores, username: string) => Promise<R | null>,
  text: (username: string, result: R) => string,
): Command {
  return {
    name,
    usage: `${name} USERNAME`,
    summary,
    positionals: 1,
    async run(context, { positionals }) {
      const username = parseUsername(positionals[0], context.config);
      const result = await act(await context.stores(), username);
      if (result === null) throw new CommandError(`no user ${username}`);
      report(context, { username, ...result }, text(username, result));
    },
  };
}

/** One session as `sessions list` prints it: tab-separated, "-" for what is not known. */
function sessionLine(s: SessionView): string {
  return [s.id, s.created, `last seen ${s.last_seen}`, s.ip ?? '-', s.user_agent ?? '-'].join('\t');
}

export const COMMANDS: readonly Command[] = [
  {
    name: 'config check',
    usage: 'config check',
    summary: 'Print the effective settings (secrets masked) and warnings; exit 2 when a setting is invalid.',
    positionals: 0,
    async run(context) {
      const { settings, backends, groupSync, warnings: settingWarnings } = configReport(context.config);
      // contract §3: stored usernames that are not canonical stay listed until resolved.
      const usernames = await storedUsernameReport(context.config);
      // The sessions' Redis: an evicting policy, keyspace events (docs/freshness.md).
      const sessionStore = await sessionStoreReport(context.config);
      const warnings = [
        ...settingWarnings,
        ...usernameWarnings(usernames),
        ...sessionStoreWarnings(sessionStore),
      ];
      if (context.json) {
        context.out(JSON.stringify({ settings, backends, groupSync, warnings, usernames, sessionStore }));
        return;
      }
      const width = Math.max(...Object.keys(settings).map((name) => name.length));
      const lines = Object.entries(settings).map(([name, value]) => `${name.padEnd(width)}  ${value}`);
      // contract §8: the backends as they will be asked, in order, secrets masked.
      const chain = backends.map((backend, index) => `backend ${index + 1}: ${JSON.stringify(backend)}`);
      context.out(
        [
          ...lines,
          '',
          ...chain,
          // contract §11: which directory and account the group sync reads with, secrets masked.
          groupSync === null ? 'group sync: off' : `group sync: ${JSON.stringify(groupSync)}`,
          '',
          usernames.checked
            ? `Stored usernames: ${usernames.findings.length} not canonical.`
            : `Stored usernames: not checked (${usernames.reason}).`,
          ...(sessionStore === null || sessionStore.checked
            ? []
            : [`SESSION_STORE: not checked (${sessionStore.reason}).`]),
          '',
          ...(warnings.length === 0 ? ['No warnings.'] : warnings.map((w) => `warning: ${w}`)),
        ].join('\n'),
      );
    },
  },
  {
    name: 'migrate',
    usage: 'migrate',
    summary:
      'Create or upgrade the database schema, and bring stored usernames to canonical form (the server also does this at start-up).',
    positionals: 0,
    async run(context) {
      const applied = await migrateStores(context.config.store);
      // contract §3: every renamed, colliding or refused name is printed for the administrator.
      const usernames = await migrateUsernames(await context.stores(), context.config.usernameCase);
      const lines = [
        applied.length === 0 ? 'Database is up to date.' : `Applied migrations: ${applied.join(', ')}.`,
        ...usernames.map((finding) => `username ${findingText(finding, true)}`),
      ];
      report(context, { applied, usernames }, lines.join('\n'));
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
        report(
          context,
          { ok: true, ...outcome.counts },
          `Imported ${groups} groups, ${users} users, ${memberships} memberships.`,
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
  ...GROUP_COMMANDS,
  ...SYNC_COMMANDS,
  {
    name: 'user list',
    usage: 'user list',
    summary: 'List users with their active flag and last login.',
    positionals: 0,
    async run(context) {
      const users = await (await context.stores()).users.list();
      const iso = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString());
      report(
        context,
        users,
        users
          .map((u) => `${u.username}\t${u.active ? 'active' : 'disabled'}\tlast login ${iso(u.lastLoginAt)}`)
          .join('\n') || 'No users.',
      );
    },
  },
  userCommand(
    'user disable',
    'Disable a user: refused at login, and every session of theirs ends now.',
    disableUser,
    (username, { revoked }) => `Disabled ${username}; ended ${revoked} sessions.`,
  ),
  {
    name: 'user merge',
    usage: 'user merge FROM INTO',
    summary:
      "Merge user FROM (its name exactly as stored, e.g. a duplicate the username migration disabled) into INTO: memberships move, the higher status wins, FROM's sessions end and FROM is removed.",
    positionals: 2,
    async run(context, { positionals }) {
      // FROM is taken as stored, not canonicalised: the rows a merge exists for are the ones whose
      // names are not canonical (contract §3's migration disables them), which no canonical
      // argument could name. INTO is canonicalised as every other USERNAME.
      const from = positionals[0] ?? '';
      if (from === '') throw new UsageError('FROM may not be blank');
      const into = parseUsername(positionals[1], context.config);
      if (from === into) throw new UsageError('FROM and INTO are the same user');
      const merged = await mergeUser(await context.stores(), from, into);
      if ('missing' in merged) throw new CommandError(`no user ${JSON.stringify(merged.missing)}`);
      const { moved, raised, kept, revoked } = merged;
      context.logger.info(
        { audit: 'user merge', from, into, memberships: { moved, raised, kept }, sessionsEnded: revoked },
        'user merged',
      );
      report(
        context,
        { from, into, moved, raised, kept, revoked },
        `Merged ${JSON.stringify(from)} into ${into}: ${moved} memberships moved, ${raised} raised, ${kept} already as high; ended ${revoked} sessions; ${JSON.stringify(from)} removed.`,
      );
    },
  },
  userCommand(
    'user enable',
    'Enable a user again (sessions ended by the disable stay ended).',
    async (stores, username) => ((await enableUser(stores, username)) ? { active: true } : null),
    (username) => `Enabled ${username}.`,
  ),
  {
    name: 'sessions purge-expired',
    usage: 'sessions purge-expired',
    summary: 'Delete expired sessions (the server also does this every 10 minutes).',
    positionals: 0,
    async run(context) {
      const purged = await (await context.stores()).sessions.purgeExpired(context.now());
      report(context, { purged }, `Deleted ${purged} expired sessions.`);
    },
  },
  {
    name: 'sessions list',
    usage: 'sessions list USERNAME',
    summary:
      "List a user's live sessions, newest first: id (as the user sees it), created, last seen, IP, user agent.",
    positionals: 1,
    async run(context, { positionals }) {
      const { username, stores } = await knownUser(context, positionals[0]);
      // The ids the user sees are keyed by the service's secret (contract §9): the CLI reads the same.
      const secret = await sharedSecret(context.config.secretKey, stores);
      const sessions = await new Sessions(stores.sessions, context.now, { secret }).list(username, undefined);
      report(
        context,
        { username, sessions },
        sessions.length === 0 ? `No sessions of ${username}.` : sessions.map(sessionLine).join('\n'),
      );
    },
  },
  userCommand(
    'sessions revoke',
    'Log a user out everywhere, without disabling them.',
    async (stores, username) => ({ revoked: await revokeSessions(stores, username) }),
    (username, { revoked }) => `Ended ${revoked} sessions of ${username}.`,
  ),
  ...PASSKEY_COMMANDS,
];
