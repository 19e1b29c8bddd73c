// `npm start`'s command line (package.json), read in one place for everything that must run the
// service as it runs it: the benchmark, and the image's CMD and ENV and the systemd unit's ExecStart
// and Environment=, which the deploy tests hold to it. Its shape is
// `NAME=VALUE … exec node FLAGS… src/main.ts`; any other is an error.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface NpmStart {
  /** The variables set before `exec` (e.g. MALLOC_ARENA_MAX). */
  readonly environment: Readonly<Record<string, string>>;
  /** node's flags, as written. */
  readonly flags: readonly string[];
}

export function npmStart(): NpmStart {
  const start = (
    JSON.parse(readFileSync(path.join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      scripts: { start: string };
    }
  ).scripts.start;
  const words = start.split(' ');
  const exec = words.indexOf('exec');
  const variables = words.slice(0, Math.max(0, exec));
  if (
    exec < 0 ||
    words[exec + 1] !== 'node' ||
    words.at(-1) !== 'src/main.ts' ||
    !variables.every((word) => /^[A-Z_]+=\S+$/.test(word))
  )
    throw new Error(`npm start is not "[NAME=VALUE …] exec node FLAGS… src/main.ts": ${start}`);
  return {
    environment: Object.fromEntries(
      variables.map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
    ),
    flags: words.slice(exec + 2, -1),
  };
}
