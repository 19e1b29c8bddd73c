// What every admin command is made of (contract §6): its shape, its context, its two failures.
import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import { checkUsername } from '../groups/import-fields.ts';
import type { Stores, UserRecord } from '../store/types.ts';

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
  /** JSON log lines (contract §6), to stderr: what a command logs besides what it prints. */
  readonly logger: Logger;
}

export interface Command {
  /** e.g. `group add`. */
  readonly name: string;
  readonly usage: string;
  readonly summary: string;
  /** Options taking a value (string); `--json` and `--help` are always accepted. */
  readonly options?: readonly string[];
  /** Options without a value (`--dry-run`): present or not. */
  readonly flags?: readonly string[];
  readonly positionals: number;
  run(
    context: CommandContext,
    args: {
      positionals: string[];
      values: Record<string, string | undefined>;
      flags?: ReadonlySet<string>;
    },
  ): Promise<void>;
}

/** A USERNAME argument as stored (the import's rules), or a usage error. */
export function parseUsername(value: string | undefined, config: Config): string {
  const checked = checkUsername(value, config.usernameCase);
  if ('reason' in checked) throw new UsageError(`USERNAME ${checked.reason}`);
  return checked.username;
}

/**
 * The user a USERNAME argument names, and the stores it was read from: a usage error when the
 * argument is malformed, a CommandError when there is no such user.
 */
export async function knownUser(
  context: CommandContext,
  value: string | undefined,
): Promise<{ readonly username: string; readonly user: UserRecord; readonly stores: Stores }> {
  const username = parseUsername(value, context.config);
  const stores = await context.stores();
  const user = await stores.users.get(username);
  if (user === null) throw new CommandError(`no user ${username}`);
  return { username, user, stores };
}

/** Prints a command's result: `json` with --json, else the sentence. */
export function report(context: CommandContext, json: unknown, text: string): void {
  context.out(context.json ? JSON.stringify(json) : text);
}
