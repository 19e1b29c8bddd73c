// One side of the sync case (bench/cases/sync.ts), in its own process so that its peak RSS is its
// own: `sync` runs `clubhouse sync groups` (the CLI, in-process) with the environment it is given;
// `read` is the reference, the same entries read from the directory with ldapts alone (paged
// searches of the groups with their members and ids, and of the users' uid, one after the other on
// one connection), no clubhouse. Both sides load the same modules before the clock starts (the
// reference does not use clubhouse's, but without them it measured 4-8 % slower: a colder start),
// so neither is measured loading code. Prints one JSON line: seconds and CPU seconds from the
// start of the work, peak RSS of this process (VmHWM), and what it read or wrote (for a sync, with
// where its time went: its outcome's phases, and whether it was replayed).
import { readFileSync } from 'node:fs';
import { Client } from 'ldapts';

const [mode] = process.argv.slice(2);
const env = process.env;
const { runCli: cli } = await import('../../src/cli/main.ts');
const runCli = mode === 'sync' ? cli : null;
const started = performance.now();
const cpuAtStart = process.cpuUsage();
let detail: unknown;
if (runCli !== null) {
  const out: string[] = [];
  const err: string[] = [];
  const logs: string[] = [];
  // At info level, so that the outcome's line (with its phases) is logged: to memory, not to a pipe.
  const code = await runCli(
    ['sync', 'groups', '--json'],
    { ...env, LOG_LEVEL: 'info' },
    {
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      log: (line) => logs.push(line),
    },
  );
  if (code !== 0) throw new Error(`sync failed: ${err.join('\n')}`);
  const outcome = logs
    .map((line) => JSON.parse(line) as { groupSync?: { replayed: boolean; phases: unknown } })
    .find((line) => line.groupSync !== undefined)?.groupSync;
  detail = {
    counts: (JSON.parse(out.join('')) as { counts: unknown }).counts,
    replayed: outcome?.replayed,
    phases: outcome?.phases,
  };
} else {
  const client = new Client({ url: env['LDAP_URL'] ?? '' });
  await client.bind(env['LDAP_BIND_DN'] ?? '', env['LDAP_BIND_PASSWORD'] ?? '');
  const pageSize = Number(env['GROUP_SYNC_PAGE_SIZE'] ?? 500);
  let groups = 0;
  let members = 0;
  for await (const page of client.searchPaginated(env['LDAP_GROUP_BASE_DN'] ?? '', {
    scope: 'sub',
    filter: '(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=posixGroup))',
    attributes: ['cn', 'description', 'entryUUID', 'member', 'uniqueMember', 'memberUid', 'owner'],
    paged: { pageSize },
  })) {
    for (const entry of page.searchEntries) {
      groups++;
      const member = entry['member'];
      members += Array.isArray(member) ? member.length : member === undefined ? 0 : 1;
    }
  }
  let users = 0;
  for await (const page of client.searchPaginated(env['LDAP_BASE_DN'] ?? '', {
    scope: 'sub',
    filter: '(uid=*)',
    attributes: ['uid'],
    paged: { pageSize },
  }))
    users += page.searchEntries.length;
  await client.unbind();
  detail = { groups, members, users };
}
const cpu = process.cpuUsage(cpuAtStart);
// VmHWM, not getrusage's maxRSS: Linux carries the latter over an exec from the process that spawned
// this one (the bench's runner, a few hundred MiB), so it would report the runner's peak, not ours.
const peakKib = Number(
  /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? Number.NaN,
);
process.stdout.write(
  `${JSON.stringify({
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    peakRss: peakKib * 1024,
    detail,
  })}\n`,
);
