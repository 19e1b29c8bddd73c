// The LDAP login case of `npm run bench` (contract §8): POST /api/auth/login + logout against
// clubhouse with AUTH_BACKENDS=ldap (direct bind over LDAPS), versus a raw ldapts bind loop
// (connect, TLS, bind, unbind) on the same harness slapd, at the same concurrency.

import type { Dovecot } from '../test/helpers/dovecot.ts';
import { TEST_USERS } from '../test/helpers/dovecot.ts';
import { PEOPLE_DN, startSlapd } from '../test/helpers/slapd.ts';
import { compare, type Schedule } from './compare.ts';
import { assertRunning, loginLoad, loginRound, withCpu } from './measures.ts';
import { type CaseRow, fixed } from './report.ts';
import { startClubhouse } from './servers.ts';

/** Runs the case on its own slapd and clubhouse, both stopped before it returns. */
export async function ldapLoginCase(options: {
  readonly database: string;
  readonly dovecot: Dovecot;
  readonly concurrency: number;
  readonly schedule: Schedule;
  readonly log: (line: string) => void;
}): Promise<CaseRow> {
  const { concurrency, log } = options;
  log(`POST /api/auth/login + logout via LDAP vs raw LDAP bind/unbind, ${concurrency} at once`);
  const users = TEST_USERS.filter((user) => /^user[0-9]{3}$/.test(user.username));
  const slapd = await startSlapd(users);
  const url = `ldaps://localhost:${slapd.tlsPort}`;
  const clubhouse = await startClubhouse('clubhouse (LDAP)', options.database, options.dovecot, 1, {
    AUTH_BACKENDS: 'ldap',
    LDAP_URL: url,
    LDAP_CA_FILE: slapd.caFile,
    LDAP_USER_DN: `uid={username},${PEOPLE_DN}`,
  });
  const rawFailures: Record<string, number> = {};
  const loginFailures: Record<string, number> = {};
  try {
    const comparison = await compare(
      {
        label: 'raw LDAP bind',
        measure: (seconds) =>
          withCpu(slapd.pid, false, async () =>
            loginRound(
              await loginLoad('ldap', [url, slapd.caFile, String(concurrency), String(seconds)]),
              rawFailures,
            ),
          ),
      },
      {
        label: 'clubhouse (LDAP)',
        measure: (seconds) =>
          withCpu(clubhouse.pid, false, async () => {
            const result = await loginLoad('http', [clubhouse.url, String(concurrency), String(seconds)]);
            assertRunning(clubhouse);
            return loginRound(result, loginFailures);
          }),
      },
      options.schedule,
      log,
    );
    const ratio = [...comparison.ratios].sort((a, b) => a - b)[Math.floor(comparison.ratios.length / 2)] ?? 0;
    const text = (failures: Record<string, number>) =>
      Object.entries(failures)
        .map(([reason, n]) => `${n}× ${reason}`)
        .join(', ');
    const notes = [
      'the raw loop is one ldapts connection per login (TLS, simple bind, unbind), the least a directory ' +
        "check costs here; clubhouse adds HTTP, the session store and a logout request (Reference server CPU is slapd's).",
    ];
    if (Object.keys(loginFailures).length > 0) notes.push(`failed clubhouse logins: ${text(loginFailures)}`);
    if (Object.keys(rawFailures).length > 0) notes.push(`failed raw binds: ${text(rawFailures)}`);
    return {
      name: `POST /api/auth/login + logout via LDAP (${concurrency} at once)`,
      comparison,
      unit: 'logins/s',
      verdicts: [{ target: '≥ 0.5× raw LDAP bind rate', actual: `${fixed(ratio, 2)}×`, pass: ratio >= 0.5 }],
      notes,
    };
  } finally {
    await clubhouse.stop();
    await slapd.stop();
  }
}
