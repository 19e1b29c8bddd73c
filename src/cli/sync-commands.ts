// `clubhouse sync groups [--dry-run] [--keep-removed] [--allow-removals]` (contract §11): one run of
// the group sync, the same one GROUP_SYNC_INTERVAL runs in the service, contending for the same
// lease. It prints the counts and every change (a dry run prints what a real run on the same data
// then does), logs the outcome, and exits 1 with the reason on any failure, having changed nothing.
// A run held by GROUP_SYNC_MAX_REMOVALS prints what it would have done, and exits 1.
import { groupDirectory } from '../backends/ldap/groups/reader.ts';
import { planLines } from '../groups/sync/lines.ts';
import { runGroupSync, syncOutcomeLog } from '../groups/sync/run.ts';
import { type Command, CommandError } from './command.ts';

export const SYNC_COMMANDS: readonly Command[] = [
  {
    name: 'sync groups',
    usage: 'sync groups [--dry-run] [--keep-removed] [--allow-removals]',
    summary:
      "Make the directory's groups and memberships clubhouse's (LDAP_GROUP_BASE_DN); --dry-run prints what would change, --keep-removed keeps groups gone from the directory, --allow-removals lifts GROUP_SYNC_MAX_REMOVALS for this run.",
    positionals: 0,
    flags: ['dry-run', 'keep-removed', 'allow-removals'],
    async run(context, { flags }) {
      const sync = context.config.groupSync;
      if (sync === null)
        throw new CommandError(
          'sync groups: no directory to sync from: set LDAP_GROUP_BASE_DN (or a groups object in AUTH_CONFIG); see docs/group-sync.md',
        );
      const dryRun = flags?.has('dry-run') === true;
      const stores = await context.stores();
      const outcome = await runGroupSync(
        {
          directory: groupDirectory(sync.directory),
          store: stores.groupSync,
          usernameCase: context.config.usernameCase,
        },
        {
          dryRun,
          keepRemoved: flags?.has('keep-removed') === true,
          maxRemovals: sync.maxRemovals,
          allowRemovals: flags?.has('allow-removals') === true,
        },
      );
      const log = syncOutcomeLog(outcome, 'cli');
      context.logger[log.level](log.fields, log.message);
      if (!outcome.ok && outcome.stage === 'removals') {
        // What the run would have done, so the operator sees which groups before allowing it.
        const lines = planLines(outcome.plan);
        if (context.json)
          context.out(
            JSON.stringify({ dryRun, held: true, counts: outcome.plan.counts, changes: lines.slice(1) }),
          );
        else context.out(['held: nothing written', ...lines].join('\n'));
        throw new CommandError(`sync groups held: ${outcome.reason}`);
      }
      if (!outcome.ok) throw new CommandError(`sync groups failed: ${outcome.reason}`);
      const lines = planLines(outcome.plan);
      if (context.json) {
        context.out(JSON.stringify({ dryRun, counts: outcome.plan.counts, changes: lines.slice(1) }));
        return;
      }
      context.out([...(dryRun ? ['dry run: nothing written'] : []), ...lines].join('\n'));
    },
  },
];
