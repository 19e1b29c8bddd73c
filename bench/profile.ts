// npm run bench:profile: where clubhouse's CPU goes per request, case by case. Seeds the bench's
// database (1 000 000 sessions, 100 000 groups), starts clubhouse as `npm start` runs it (its
// default settings) with node's --cpu-prof, loads it with the bench's wrk scripts, stops it
// (SIGTERM writes the profile), and prints each case's self time per request by function and by
// file: the table docs/benchmarks.md keeps. PROFILE_CASES=check,no-cookie,groups,detail (default:
// all), PROFILE_SECONDS (default 10). The .cpuprofile files are kept (path printed) for a flame graph
// in Chrome's DevTools or speedscope.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureDebianPackage } from '../test/helpers/apt.ts';
import { removeOnExit } from '../test/helpers/child.ts';
import { startDovecot } from '../test/helpers/dovecot.ts';
import { BIG } from './machinery/options.ts';
import { seedDatabase } from './machinery/seed.ts';
import { startClubhouse } from './machinery/servers.ts';
import { runWrk, WRK_BIN } from './machinery/wrk.ts';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const CASES: Record<string, { readonly script: string; readonly path: string }> = {
  check: { script: 'check.lua', path: '/api/auth/check' },
  'no-cookie': { script: 'no-cookie.lua', path: '/api/auth/check' },
  groups: { script: 'group-list.lua', path: '/api/group/' },
  detail: { script: 'group-detail.lua', path: '/api/group/1' },
};
const SECONDS = Number(process.env['PROFILE_SECONDS'] ?? '10');
const WANTED = (process.env['PROFILE_CASES'] ?? Object.keys(CASES).join(',')).split(',');
const TOP = 25;

/** A file as the table names it: the project's own relative, node's internals and packages by name. */
function fileOf(url: string): string {
  if (url === '') return '(native, gc, idle, program)';
  const root = path.join(import.meta.dirname, '..');
  const local = url.startsWith('file://') ? new URL(url).pathname : url;
  if (local.startsWith(`${root}/node_modules/`)) return `npm:${local.slice(root.length + 14).split('/')[0]}`;
  if (local.startsWith(root)) return local.slice(root.length + 1);
  return local;
}

/** Self time (µs) by function and by file, from a .cpuprofile. */
function selfTimes(profile: Profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const file = fileOf(url);
    const name = `${functionName || '(anonymous)'} ${file}${url === '' ? '' : `:${lineNumber + 1}`}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  }
  return { byFunction, byFile };
}

function table(title: string, entries: Map<string, number>, requests: number, idle: number): string {
  const rows = [...entries]
    .filter(([name]) => !name.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([name, us]) => `| ${name} | ${(us / requests).toFixed(2)} |`);
  return [
    `| ${title} | µs per request |`,
    '|---|---:|',
    ...rows,
    `| (idle) | ${(idle / requests).toFixed(2)} |`,
  ].join('\n');
}

async function main(): Promise<void> {
  await ensureDebianPackage(WRK_BIN, 'wrk');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'clubhouse-profile-'));
  removeOnExit(dir);
  process.stderr.write('seeding 1 000 000 sessions, 100 000 groups …\n');
  const big = seedDatabase(path.join(dir, 'big.db'), path.join(dir, 'load.txt'), BIG);
  const dovecot = await startDovecot({ authFailureDelay: 0 });
  try {
    for (const name of WANTED) {
      const load = CASES[name];
      if (load === undefined) throw new Error(`PROFILE_CASES: unknown case ${name}`);
      const profiles = mkdtempSync(path.join(os.tmpdir(), `clubhouse-profile-${name}-`));
      const server = await startClubhouse({
        label: `clubhouse ${name}`,
        databaseUrl: `sqlite:${big.path}`,
        dovecot,
        dir,
        nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profiles}`],
      });
      const url = `${server.url}${load.path}`;
      // Warm-up (JIT, memory filled), then the measured run; the profile covers both, so the
      // warm-up is short beside it.
      await runWrk({
        url,
        script: load.script,
        loadFile: big.loadFile,
        seconds: 2,
        connections: 50,
        threads: 2,
      });
      const run = await runWrk({
        url,
        script: load.script,
        loadFile: big.loadFile,
        seconds: SECONDS,
        connections: 50,
        threads: 2,
      });
      await server.stop();
      const file = readdirSync(profiles).find((entry) => entry.endsWith('.cpuprofile'));
      if (file === undefined) throw new Error(`no profile written for ${name}`);
      const profile = JSON.parse(readFileSync(path.join(profiles, file), 'utf8')) as Profile;
      const { byFunction, byFile } = selfTimes(profile);
      const idle = [...byFunction]
        .filter(([n]) => n.startsWith('(idle)'))
        .reduce((sum, [, us]) => sum + us, 0);
      const requests = run.requests * (1 + 2 / SECONDS); // the warm-up's share, at the same rate
      const total = [...byFile.values()].reduce((sum, us) => sum + us, 0) - idle;
      process.stdout.write(
        [
          `## ${name}: ${load.path}, ${Math.round(run.requestsPerSecond)} requests/s, ${(total / requests).toFixed(1)} µs of CPU per request in the profile (load average ${os.loadavg()[0]!.toFixed(2)})`,
          '',
          table('file', byFile, requests, idle),
          '',
          table('function', byFunction, requests, idle),
          '',
          `profile: ${path.join(profiles, file)}`,
          '',
        ].join('\n'),
      );
    }
  } finally {
    await dovecot.stop();
  }
}

await main();
