// `clubhouse passkeys list|remove|reset` (contract §12): the administrators' view of a user's
// passkeys, and the recovery of a user who lost every device: reset removes every passkey, turns
// password sign-in back on and ends the user's sessions. Each change is audited (a log line naming
// the passkey's public id, never its credential id).
import { Sessions, sharedSecret } from '../auth/sessions.ts';
import type { StoredPasskey } from '../store/types.ts';
import { type Command, CommandError, knownUser, parseUsername, report } from './command.ts';

const iso = (ms: number | null) => (ms === null ? 'never' : new Date(ms).toISOString());

/** One passkey as `passkeys list` prints it: tab-separated. */
function passkeyLine(p: StoredPasskey): string {
  return [
    p.handle,
    p.name,
    `created ${iso(p.createdAt)}`,
    `last used ${iso(p.lastUsedAt)}`,
    p.backedUp ? 'synced' : 'device-bound',
    p.clonedAt === null ? '' : `CLONED? counter went back at ${iso(p.clonedAt)}`,
  ]
    .filter((field) => field !== '')
    .join('\t');
}

export const PASSKEY_COMMANDS: readonly Command[] = [
  {
    name: 'passkeys list',
    usage: 'passkeys list USERNAME',
    summary:
      "List a user's passkeys, newest first: id (as the user sees it), name, created, last used, synced or device-bound, and a flag when one looked cloned; and whether password sign-in is on.",
    positionals: 1,
    async run(context, { positionals }) {
      const { username, user, stores } = await knownUser(context, positionals[0]);
      const passkeys = await stores.passkeys.list(username);
      report(
        context,
        {
          username,
          passwordSignIn: user.passwordSignIn,
          passkeys: passkeys.map((p) => ({
            id: p.handle,
            name: p.name,
            created: iso(p.createdAt),
            lastUsed: p.lastUsedAt === null ? null : iso(p.lastUsedAt),
            synced: p.backedUp,
            cloned: p.clonedAt !== null,
          })),
        },
        [
          `Password sign-in: ${user.passwordSignIn ? 'on' : 'off'}.`,
          ...(passkeys.length === 0 ? [`No passkeys of ${username}.`] : passkeys.map(passkeyLine)),
        ].join('\n'),
      );
    },
  },
  {
    name: 'passkeys remove',
    usage: 'passkeys remove USERNAME ID',
    summary:
      'Remove one passkey of a user (its id from `passkeys list`); the sessions that signed in with it end, and removing the last one turns password sign-in back on.',
    positionals: 2,
    async run(context, { positionals }) {
      const username = parseUsername(positionals[0], context.config);
      const id = positionals[1] ?? '';
      const stores = await context.stores();
      if (!/^[0-9a-f]{32}$/.test(id) || !(await stores.passkeys.remove(username, id)))
        throw new CommandError(`no passkey ${JSON.stringify(id)} of ${username}`);
      const secret = await sharedSecret(context.config.secretKey, stores);
      const sessions = new Sessions(stores.sessions, context.now, { secret });
      const { ended } = await sessions.endSignedInWith(username, id, undefined);
      context.logger.info(
        {
          audit: 'passkey',
          action: 'delete',
          username,
          passkey: id,
          by: 'clubhouse passkeys remove',
          sessionsEnded: ended,
        },
        'passkey change',
      );
      report(
        context,
        { username, removed: id, sessionsEnded: ended },
        `Removed passkey ${id} of ${username}; ended ${ended} sessions.`,
      );
    },
  },
  {
    name: 'passkeys reset',
    usage: 'passkeys reset USERNAME',
    summary:
      'The recovery for a lost device: remove every passkey of a user, turn password sign-in back on, and end all their sessions.',
    positionals: 1,
    async run(context, { positionals }) {
      const { username, stores } = await knownUser(context, positionals[0]);
      const removed = await stores.passkeys.removeAll(username);
      const ended = await stores.sessions.revokeUser(username);
      context.logger.info(
        {
          audit: 'passkey',
          action: 'reset',
          username,
          passkeysRemoved: removed,
          sessionsEnded: ended,
          by: 'clubhouse passkeys reset',
        },
        'passkey change',
      );
      report(
        context,
        { username, removed, sessionsEnded: ended, passwordSignIn: true },
        `Removed ${removed} passkeys of ${username}; password sign-in is on; ended ${ended} sessions.`,
      );
    },
  },
];
