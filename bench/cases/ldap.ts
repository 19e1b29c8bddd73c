// The LDAP login case of `npm run bench` (contract §8): POST /api/auth/login + logout against
// clubhouse with AUTH_BACKENDS=ldap (direct bind over LDAPS), versus a raw ldapts bind loop
// (connect, TLS, bind, unbind) on the same harness slapd, at the same concurrency.

import { TEST_USERS } from '../../test/helpers/dovecot.ts';
import { PEOPLE_DN, startSlapd } from '../../test/helpers/slapd.ts';
import { type BenchContext, contest } from '../machinery/contest.ts';
import { assertRunning, loginLoad, loginRound, withCpu } from '../machinery/measures.ts';
import { startClubhouse } from '../machinery/servers.ts';
import { type CaseResult, caseRow, failureText } from '../report/case-rows.ts';

/** Runs the case on its own slapd and clubhouse (on the 1 000-session database), both stopped after. */
export async function ldapLoginCase(context: BenchContext, concurrency: number): Promise<CaseResult> {
  const { log } = context;
  log(`POST /api/auth/login + logout via LDAP vs raw LDAP bind/unbind, ${concurrency} at once`);
  const users = TEST_USERS.filter((user) => /^user[0-9]{3}$/.test(user.username));
  const slapd = await startSlapd(users);
  const url = `ldaps://localhost:${slapd.tlsPort}`;
  const rawFailures: Record<string, number> = {};
  const loginFailures: Record<string, number> = {};
  try {
    const clubhouse = context.track(
      await startClubhouse({
        label: 'clubhouse (LDAP)',
        databaseUrl: `sqlite:${context.small.path}`,
        dovecot: context.dovecot,
        dir: context.dir,
        settings: {
          AUTH_BACKENDS: 'ldap',
          LDAP_URL: url,
          LDAP_CA_FILE: slapd.caFile,
          LDAP_USER_DN: `uid={username},${PEOPLE_DN}`,
        },
      }),
    );
    const { sides, peaks } = await contest(context, [
      {
        label: 'raw LDAP bind',
        pids: [slapd.pid],
        measure: (seconds) =>
          withCpu([{ pid: slapd.pid }], async () =>
            loginRound(
              await loginLoad('ldap', [url, slapd.caFile, String(concurrency), String(seconds)]),
              rawFailures,
            ),
          ),
      },
      {
        label: 'clubhouse (LDAP)',
        pids: [clubhouse.pid],
        measure: (seconds) =>
          withCpu([clubhouse], async () => {
            const result = await loginLoad('http', [clubhouse.url, String(concurrency), String(seconds)]);
            assertRunning(clubhouse);
            return loginRound(result, loginFailures);
          }),
      },
    ]);
    await context.stop(clubhouse);
    const notes = [
      'the raw loop is one ldapts connection per login (TLS, simple bind, unbind), the least a directory ' +
        "check costs here; clubhouse adds HTTP, the session store and a logout request (the reference's CPU and RSS are slapd's).",
    ];
    if (Object.keys(loginFailures).length > 0)
      notes.push(`failed clubhouse logins: ${failureText(loginFailures)}`);
    if (Object.keys(rawFailures).length > 0) notes.push(`failed raw binds: ${failureText(rawFailures)}`);
    return {
      rows: [
        caseRow({
          name: `POST /api/auth/login + logout via LDAP (${concurrency} at once)`,
          chartLabel: 'LDAP login (vs raw bind)',
          reference: sides[0]!,
          subject: sides[1]!,
          peaks: [peaks[0]!, peaks[1]!],
          minimum: 0.5,
          notes,
          unit: 'logins/s',
          allowNon2xx: true,
        }),
      ],
      memory: [],
    };
  } finally {
    await slapd.stop();
  }
}
