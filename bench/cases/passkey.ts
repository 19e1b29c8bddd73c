// The passkey sign-in case of `npm run bench` (contract §12): the options request, a signature by a
// software authenticator, POST /api/auth/passkeys/login and a logout, against the password login
// (IMAP, the harness Dovecot) on the same clubhouse, at the same concurrency. Both sides are
// clubhouse: the ratio says how much cheaper a sign-in is with no mail server in the way, and the
// CPU column what clubhouse itself spends on one (the WebAuthn verification, the challenge taken
// once, the session written).
import path from 'node:path';
import { TEST_USERS } from '../../test/helpers/dovecot.ts';
import { type BenchContext, contest } from '../machinery/contest.ts';
import { assertRunning, loginLoad, loginRound, withCpu } from '../machinery/measures.ts';
import { enrollPasskeys } from '../machinery/passkey-keys.ts';
import { startClubhouse } from '../machinery/servers.ts';
import { type CaseResult, caseRow, failureText } from '../report/case-rows.ts';

/** The origin the software authenticator signs for: PUBLIC_URL's, whatever port serves it. */
const ORIGIN = 'http://localhost';

/** Runs the case on its own clubhouse (on the 1 000-session database), stopped after. */
export async function passkeyLoginCase(context: BenchContext, concurrency: number): Promise<CaseResult> {
  const { log } = context;
  log(
    `POST /api/auth/passkeys/login + logout vs POST /api/auth/login (IMAP) + logout, ${concurrency} at once`,
  );
  const users = TEST_USERS.filter((user) => /^user[0-9]{3}$/.test(user.username));
  const clubhouse = context.track(
    await startClubhouse({
      label: 'clubhouse (passkeys)',
      databaseUrl: `sqlite:${context.small.path}`,
      dovecot: context.dovecot,
      dir: context.dir,
      settings: { PUBLIC_URL: ORIGIN },
    }),
  );
  const keysFile = path.join(context.dir, 'passkeys.json');
  await enrollPasskeys(clubhouse.url, ORIGIN, users, keysFile);
  const passwordFailures: Record<string, number> = {};
  const passkeyFailures: Record<string, number> = {};
  const { sides, peaks } = await contest(context, [
    {
      label: 'password login (IMAP)',
      pids: [clubhouse.pid],
      measure: (seconds) =>
        withCpu([clubhouse], async () => {
          const result = await loginLoad('http', [clubhouse.url, String(concurrency), String(seconds)]);
          assertRunning(clubhouse);
          return loginRound(result, passwordFailures);
        }),
    },
    {
      label: 'passkey sign-in',
      pids: [clubhouse.pid],
      measure: (seconds) =>
        withCpu([clubhouse], async () => {
          const result = await loginLoad('passkey', [
            clubhouse.url,
            keysFile,
            String(concurrency),
            String(seconds),
          ]);
          assertRunning(clubhouse);
          return loginRound(result, passkeyFailures);
        }),
    },
  ]);
  await context.stop(clubhouse);
  const notes = [
    `a sign-in is two requests (the options with their challenge cookie, then the signed assertion: ES256, ${users.length} synced passkeys in turn), then a logout; ` +
      "the reference is the same clubhouse's password login through IMAP, whose time goes to Dovecot (its CPU is not counted in either column).",
  ];
  if (Object.keys(passkeyFailures).length > 0)
    notes.push(`failed passkey sign-ins: ${failureText(passkeyFailures)}`);
  if (Object.keys(passwordFailures).length > 0)
    notes.push(`failed password logins: ${failureText(passwordFailures)}`);
  return {
    rows: [
      caseRow({
        name: `POST /api/auth/passkeys/login + logout (${concurrency} at once)`,
        chartLabel: 'passkey sign-in (vs password login)',
        reference: sides[0]!,
        subject: sides[1]!,
        peaks: [peaks[0]!, peaks[1]!],
        minimum: 5,
        notes,
        unit: 'logins/s',
        allowNon2xx: true,
      }),
    ],
    memory: [],
  };
}
