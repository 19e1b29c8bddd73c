// One side of the sync case (bench/cases/sync.ts), in its own process so that its peak RSS is its
// own: `sync` runs `clubhouse sync groups` (the CLI, in-process) with the environment it is given;
// `read` is the reference, the same entries read from the directory with ldapts alone (paged
// searches of the groups with their members and ids, and of the users' uid), no clubhouse. Prints
// one JSON line: seconds, CPU seconds and peak RSS of this process, and what it read or wrote.
import { Client } from 'ldapts';
import { runCli } from '../../src/cli/main.ts';

const [mode] = process.argv.slice(2);
const env = process.env;
const started = performance.now();
let detail: unknown;
if (mode === 'sync') {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['sync', 'groups', '--json'], env, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    log: () => undefined,
  });
  if (code !== 0) throw new Error(`sync failed: ${err.join('\n')}`);
  detail = (JSON.parse(out.join('')) as { counts: unknown }).counts;
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
const usage = process.resourceUsage();
process.stdout.write(
  `${JSON.stringify({
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
    peakRss: usage.maxRSS * 1024,
    detail,
  })}\n`,
);
