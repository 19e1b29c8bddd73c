// `clubhouse`, the admin command line (contract §6). Exit codes: 0 ok, 1 failure, 2 usage.
import { parseArgs } from 'node:util';
import { type Config, ConfigError, environmentWithDotenv, loadConfig } from '../config/config.ts';
import { createLogger } from '../logger.ts';
import { openStores } from '../store/open.ts';
import type { Stores } from '../store/types.ts';
import { type Command, CommandError, UsageError } from './command.ts';
import { COMMANDS } from './commands.ts';

export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Where JSON log lines go (each ends with a newline); default: `err`. */
  readonly log?: (line: string) => void;
}

function help(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: clubhouse COMMAND [ARGS] [--json]',
    '',
    'Administers the clubhouse database named by DATABASE_URL (default sqlite:data/clubhouse.db),',
    'also while the server runs. --json prints machine-readable output; --help on any command.',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Exit codes: 0 done, 1 failed, 2 usage error.',
  ].join('\n');
}

function commandHelp(command: Command): string {
  return `Usage: clubhouse ${command.usage} [--json]\n\n${command.summary}`;
}

/** Finds the command named by the first one or two words. */
function findCommand(words: string[]): { command: Command; rest: string[] } | null {
  for (const length of [2, 1]) {
    const name = words.slice(0, length).join(' ');
    const command = COMMANDS.find((c) => c.name === name);
    if (command !== undefined) return { command, rest: words.slice(length) };
  }
  return null;
}

/** Runs one CLI invocation; returns the exit code. */
export async function runCli(
  argv: string[],
  env: Readonly<Record<string, string | undefined>>,
  io: CliIo,
): Promise<number> {
  if (argv.length === 0) {
    // No command is a usage error: the help goes to stderr like every other usage message.
    io.err(help());
    return 2;
  }
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(help());
    return 0;
  }
  const found = findCommand(argv);
  if (found === null) {
    io.err(`clubhouse: unknown command "${argv.slice(0, 2).join(' ')}"\n\n${help()}`);
    return 2;
  }
  const { command, rest } = found;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    const options: Record<string, { type: 'string' | 'boolean' }> = {
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' } as { type: 'boolean' },
    };
    for (const option of command.options ?? []) options[option] = { type: 'string' };
    for (const flag of command.flags ?? []) options[flag] = { type: 'boolean' };
    parsed = parseArgs({ args: rest, options, allowPositionals: true, strict: true });
  } catch (err) {
    io.err(`clubhouse: ${(err as Error).message}\n\n${commandHelp(command)}`);
    return 2;
  }
  if (parsed.values['help'] === true) {
    io.out(commandHelp(command));
    return 0;
  }
  if (parsed.positionals.length !== command.positionals) {
    io.err(`clubhouse: ${command.name} takes ${command.positionals} argument(s)\n\n${commandHelp(command)}`);
    return 2;
  }
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`clubhouse: invalid setting ${err.message}`);
      return 2;
    }
    throw err;
  }
  let stores: Stores | null = null;
  const json = parsed.values['json'] === true;
  try {
    const flags = new Set((command.flags ?? []).filter((flag) => parsed.values[flag] === true));
    const values = Object.fromEntries(
      Object.entries(parsed.values).filter(
        (entry): entry is [string, string] => typeof entry[1] === 'string',
      ),
    );
    await command.run(
      {
        config,
        json,
        out: io.out,
        now: Date.now,
        logger: createLogger(config.logLevel, {
          write: (line: string) => (io.log ?? ((text) => io.err(text.replace(/\n$/, ''))))(line),
        }),
        stores: async () => {
          stores ??= await openStores(config.store);
          return stores;
        },
      },
      { positionals: parsed.positionals, values, flags },
    );
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`clubhouse: ${err.message}\n\n${commandHelp(command)}`);
      return 2;
    }
    io.err(
      `clubhouse: ${err instanceof CommandError ? err.message : `${command.name} failed: ${(err as Error).message}`}`,
    );
    return 1;
  } finally {
    await (stores as Stores | null)?.close();
  }
}

if (import.meta.main) {
  const code = await runCli(process.argv.slice(2), environmentWithDotenv(), {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  });
  process.exitCode = code;
}
