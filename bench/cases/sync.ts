// The group sync case of `npm run bench` (contract §11): 10 000 groups and 100 000 memberships in the
// harness slapd, synced into a fresh SQLite database by `clubhouse sync groups`: the first run and a
// run with no directory change, each with its time and peak RSS, against the reference measured in
// the same run: the same entries read from the directory with ldapts alone (paged searches one
// after the other on one connection, no clubhouse). Target: the no-change run takes no longer than
// reading the directory does.
//
// What bounds each run is reported from its outcome's phases (directory, records, plan, store) and
// two CPU figures: the side's own from the start of its work, and slapd's (user + system of the
// slapd process: /proc/PID/stat counts every thread of it; checked against the sum of its threads'
// schedstat, 0.107 s against 0.10 s for one read). slapd serves the 20 000 entries from its cache
// for about 0.1 s of CPU: a read's time is mostly the client's work and the round trips.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  attr,
  entry,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  startSlapd,
} from '../../test/helpers/slapd.ts';
import type { BenchContext } from '../machinery/contest.ts';
import { cpuSecondsOfTree } from '../machinery/procs.ts';
import type { CaseResult } from '../report/case-rows.ts';
import { fixed, type MemoryRow, MIB } from '../report/markdown.ts';

const run = promisify(execFile);
const GROUPS = 10_000;
const MEMBERS_PER_GROUP = 10;
const USERS = 10_000;
const GROUPS_DN = 'ou=groups,dc=example,dc=org';
const CHILD = path.join(import.meta.dirname, 'sync-child.ts');

interface ChildFigures {
  readonly seconds: number;
  /** The side's own CPU from the start of its work (module loading excluded). */
  readonly cpuSeconds: number;
  readonly peakRss: number;
  readonly detail: unknown;
}

/** What sync-child.ts reports of a sync run. */
interface SyncDetail {
  readonly counts: unknown;
  readonly replayed: boolean;
  readonly phases: {
    readonly directory: number;
    readonly records: number;
    readonly plan: number;
    readonly store: number;
  };
}

/** 10 000 users and 10 000 groups of 10 member DNs each, in two OUs of groups (LDIF for slapadd). */
function benchLdif(): string {
  let out = entry([`dn: ${GROUPS_DN}`, 'objectClass: organizationalUnit', 'ou: groups']);
  for (const ou of ['clubs', 'classes'])
    out += entry([`dn: ou=${ou},${GROUPS_DN}`, 'objectClass: organizationalUnit', `ou: ${ou}`]);
  const uid = (i: number) => `member${String(i).padStart(5, '0')}`;
  for (let i = 0; i < USERS; i++)
    out += entry([`dn: uid=${uid(i)},${PEOPLE_DN}`, 'objectClass: account', `uid: ${uid(i)}`]);
  for (let g = 0; g < GROUPS; g++) {
    const members = [];
    for (let k = 0; k < MEMBERS_PER_GROUP; k++)
      members.push(`member: uid=${uid((g * 7 + k * 1009) % USERS)},${PEOPLE_DN}`);
    out += entry([
      `dn: cn=Group ${g},ou=${g % 2 === 0 ? 'clubs' : 'classes'},${GROUPS_DN}`,
      'objectClass: groupOfNames',
      `cn: Group ${g}`,
      attr('description', `Group number ${g} – bench`),
      ...members,
    ]);
  }
  return out;
}

/** Runs one side in its own process, with slapd's CPU over the same time. */
async function side(mode: 'sync' | 'read', env: Record<string, string>, slapdPid: number) {
  const before = cpuSecondsOfTree(slapdPid);
  const { stdout } = await run(process.execPath, ['--disable-warning=ExperimentalWarning', CHILD, mode], {
    env: { ...process.env, ...env },
    maxBuffer: 64 * MIB,
  });
  const figures = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as ChildFigures;
  return { ...figures, slapdCpu: cpuSecondsOfTree(slapdPid) - before };
}

type Figures = Awaited<ReturnType<typeof side>>;

const describe = (f: Figures) =>
  `${fixed(f.seconds, 2)} s (its own CPU ${fixed(f.cpuSeconds, 2)} s, slapd's ${fixed(f.slapdCpu, 2)} s)`;

/** A sync run's row detail: its figures, where its time went, and its counts. */
function syncDetail(f: Figures): string {
  const { counts, replayed, phases: p } = f.detail as SyncDetail;
  const phases = `directory ${fixed(p.directory, 2)} s, records ${fixed(p.records, 2)} s, plan ${fixed(p.plan, 2)} s, store ${fixed(p.store, 3)} s`;
  return `${describe(f)}; ${phases}${replayed ? '; replayed from the last writing run' : ''}; ${JSON.stringify(counts)}`;
}

/** What bounds a sync run: its largest phase, with the figures that say so. */
function bound(name: string, f: Figures, reference: Figures): string {
  const { phases: p } = f.detail as SyncDetail;
  const parts: [string, number][] = [
    ['the directory', p.directory],
    ['clubhouse (making records and planning)', p.records + p.plan],
    ['the store', p.store],
  ];
  const [largest] = [...parts].sort((a, b) => b[1] - a[1]);
  return (
    `group sync, ${name}: ${fixed(f.seconds, 2)} s = the directory ${fixed(p.directory, 2)} s (the reference reads ` +
    `the same entries in ${fixed(reference.seconds, 2)} s; slapd's CPU over the run ${fixed(f.slapdCpu, 2)} s), ` +
    `making records ${fixed(p.records, 2)} s and planning ${fixed(p.plan, 2)} s (clubhouse), the store ` +
    `${fixed(p.store, 3)} s; its own CPU ${fixed(f.cpuSeconds, 2)} s. Bound by ${largest?.[0]}.`
  );
}

export async function syncCase(context: BenchContext): Promise<CaseResult> {
  context.log(`group sync: ${GROUPS} groups, ${GROUPS * MEMBERS_PER_GROUP} memberships in slapd`);
  const slapd = await startSlapd([], { tls: false, ldif: benchLdif() });
  try {
    const env = {
      DATABASE_URL: `sqlite:${path.join(context.dir, 'sync.db')}`,
      LDAP_URL: `ldap://127.0.0.1:${slapd.plainPort}`,
      LDAP_SECURITY: 'plain',
      LDAP_BIND_DN: SERVICE_DN,
      LDAP_BIND_PASSWORD: SERVICE_PASSWORD,
      LDAP_BASE_DN: PEOPLE_DN,
      LDAP_GROUP_BASE_DN: GROUPS_DN,
      GROUP_SYNC_PAGE_SIZE: '500',
      LOG_LEVEL: 'warn',
    };
    // The reference first and last, so that slapd's own caches are as warm for it as for the runs.
    const readBefore = await side('read', env, slapd.pid);
    const first = await side('sync', env, slapd.pid);
    const unchanged = await side('sync', env, slapd.pid);
    const readAfter = await side('read', env, slapd.pid);
    const reference = readBefore.seconds <= readAfter.seconds ? readBefore : readAfter;
    const pass = unchanged.seconds <= reference.seconds;
    const rows: MemoryRow[] = [
      {
        name: 'group sync: reading the directory alone (ldapts, paged searches on one connection, reference)',
        idle: null,
        peak: reference.peakRss,
        detail: `${describe(reference)}; read ${JSON.stringify(reference.detail)}; the two reads took ${fixed(readBefore.seconds, 2)} and ${fixed(readAfter.seconds, 2)} s`,
        verdict: null,
      },
      {
        name: `group sync: first run (${GROUPS} groups, ${GROUPS * MEMBERS_PER_GROUP} memberships)`,
        idle: null,
        peak: first.peakRss,
        detail: syncDetail(first),
        verdict: null,
      },
      {
        name: 'group sync: a run with no directory change',
        idle: null,
        peak: unchanged.peakRss,
        detail: syncDetail(unchanged),
        verdict: {
          target: `≤ reading the directory alone (${fixed(reference.seconds, 2)} s)`,
          actual: `${fixed(unchanged.seconds, 2)} s`,
          pass,
        },
      },
    ];
    return {
      rows: [],
      memory: rows,
      observations: [bound('first run', first, reference), bound('no-change run', unchanged, reference)],
    };
  } finally {
    await slapd.stop();
  }
}
