// What one `npm run bench` runs: the schedule (BENCH_QUICK=1: a smoke run), the cases
// (BENCH_ONLY=a,b: a focused run at the real schedule), the seeded data, and where results go.
import path from 'node:path';
import type { Schedule } from './compare.ts';
import type { SeedPlan } from './seed.ts';

export const QUICK = process.env['BENCH_QUICK'] === '1';
export const SCHEDULE: Schedule = QUICK
  ? { warmupSeconds: 1, roundSeconds: 2, rounds: 1 }
  : // Nine rounds of 3 s rather than three of 10: on a shared host a side's rate moves by a third
    // within seconds, and one such dip decided the median of three.
    { warmupSeconds: 3, roundSeconds: 3, rounds: 9 };
// clubhouse runs at most IMAP_MAX_CONCURRENCY (32 by default) IMAP logins at once; at that
// concurrency none waits in its queue, so the login figures compare like with like.
export const LOGIN_CONCURRENCY = 32;

export const BIG: SeedPlan = {
  sessions: 1_000_000,
  users: 10_000,
  loadSessions: 10_000,
  groups: 100_000,
  groupsPerUser: 20,
};
export const SMALL: SeedPlan = {
  sessions: 1_000,
  users: 1_000,
  loadSessions: 1_000,
  groups: 1_000,
  groupsPerUser: 20,
};

const CASES = [
  'check',
  'groups',
  'search',
  'login',
  'ldap',
  'passkey',
  'sync',
  'size',
  'workers',
  'instances',
  'memory',
] as const;
export type CaseName = (typeof CASES)[number];

export const ONLY = (process.env['BENCH_ONLY'] ?? '').split(',').filter((name) => name !== '');
for (const name of ONLY) {
  if (!(CASES as readonly string[]).includes(name)) {
    throw new Error(`BENCH_ONLY: unknown case ${name} (known: ${CASES.join(', ')})`);
  }
}

/** Whether the case `name` runs in this invocation. */
export const runs = (name: CaseName): boolean => ONLY.length === 0 || ONLY.includes(name);

const RESULTS = path.join(import.meta.dirname, '..', 'results');
/** The last recorded full run: each report says how far this machine's reference costs are from its. */
export const RECORDED_FILE = path.join(RESULTS, 'latest.md');
// A smoke or focused run must not overwrite the figures of a full one.
// BENCH_TARGET=container's report sits beside the process's, not over it.
const TARGET_SUFFIX = process.env['BENCH_TARGET'] === 'container' ? '-container' : '';
export const REPORT_FILE = path.join(
  RESULTS,
  `${QUICK ? 'quick' : ONLY.length > 0 ? `only-${ONLY.join('-')}` : 'latest'}${TARGET_SUFFIX}.md`,
);
/** The chart of the ratios: a full run's (the README links it), a smoke run's; a focused run draws none. */
export const CHART_FILE =
  TARGET_SUFFIX !== ''
    ? null
    : QUICK
      ? path.join(RESULTS, 'quick.svg')
      : ONLY.length > 0
        ? null
        : path.join(RESULTS, 'ratios.svg');
