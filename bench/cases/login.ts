// The IMAP login case: POST /api/auth/login + logout against clubhouse, versus a raw IMAP
// LOGIN/LOGOUT loop (bench/machinery/login-load.ts) straight against the same harness Dovecot, at
// the same concurrency. Its reference CPU is Dovecot's (master and per-login processes).

import { median, medianRound } from '../machinery/compare.ts';
import { type BenchContext, contest } from '../machinery/contest.ts';
import { assertRunning, dovecotPid, loginLoad, loginRound, withCpu } from '../machinery/measures.ts';
import { type CaseResult, caseRow, failureText } from '../report/case-rows.ts';
import { fixed } from '../report/markdown.ts';

/** Runs the case on the main clubhouse (its logins add sessions to the 1 000 000). */
export async function imapLoginCase(context: BenchContext, concurrency: number): Promise<CaseResult> {
  const { clubhouse, dovecot, log } = context;
  log(`POST /api/auth/login + logout vs raw IMAP LOGIN/LOGOUT, ${concurrency} at once`);
  const master = dovecotPid(dovecot);
  const rawFailures: Record<string, number> = {};
  const loginFailures: Record<string, number> = {};
  const rawAuthMs: number[] = [];
  const logoutMs: number[] = [];
  const { sides, peaks } = await contest(context, [
    {
      label: 'raw IMAP',
      pids: master === null ? [] : [master],
      measure: (seconds) =>
        withCpu(master === null ? [] : [{ pid: master, reaped: true }], async () => {
          const result = await loginLoad('imap', [
            'localhost',
            String(dovecot.tlsPort),
            dovecot.caFile,
            String(concurrency),
            String(seconds),
          ]);
          rawAuthMs.push(result.secondaryP50Ms);
          return loginRound(result, rawFailures);
        }),
    },
    {
      label: 'clubhouse',
      pids: [clubhouse.pid],
      measure: (seconds) =>
        withCpu([clubhouse], async () => {
          const result = await loginLoad('http', [clubhouse.url, String(concurrency), String(seconds)]);
          assertRunning(clubhouse);
          logoutMs.push(result.secondaryP50Ms);
          return loginRound(result, loginFailures);
        }),
    },
  ]);
  const [reference, subject] = sides as [(typeof sides)[0], (typeof sides)[0]];
  const ownTime = medianRound(subject).p50Ms - medianRound(reference).p50Ms;
  const notes = [
    `the service's own time per login ≈ clubhouse login p50 − raw IMAP session p50 = ${fixed(ownTime, 1)} ms. ` +
      'Approximate: the raw loop (TLS, greeting, LOGIN, LOGOUT; its LOGIN alone took ' +
      `${fixed(median(rawAuthMs), 1)} ms p50) is the least an IMAP check costs. clubhouse's client ` +
      '(src/backends/imap/client.ts) sends one command over implicit TLS (AUTHENTICATE PLAIN with SASL-IR; the ' +
      "capabilities come with Dovecot's greeting) and flushes LOGOUT without waiting for its answer, " +
      'which the raw loop does wait for, so the ratio can exceed 1. Everything shares the cores with ' +
      "Dovecot, whose per-login processes are the bottleneck (the reference's CPU and RSS are Dovecot's).",
    `rates, CPU and log bytes count logins; each clubhouse login is followed by a logout request (p50 ` +
      `${fixed(median(logoutMs), 1)} ms), each raw session by LOGOUT`,
  ];
  if (Object.keys(loginFailures).length > 0)
    notes.push(`failed clubhouse logins: ${failureText(loginFailures)}`);
  if (Object.keys(rawFailures).length > 0)
    notes.push(`failed raw IMAP sessions: ${failureText(rawFailures)}`);
  return {
    rows: [
      caseRow({
        name: `POST /api/auth/login + logout (${concurrency} at once)`,
        chartLabel: 'login (vs raw IMAP)',
        reference,
        subject,
        peaks: [peaks[0]!, peaks[1]!],
        minimum: 0.9,
        notes,
        unit: 'logins/s',
        allowNon2xx: true,
      }),
    ],
    memory: [
      {
        name: `clubhouse, 1 process, under login load (${concurrency} at once)`,
        idle: null,
        peak: peaks[1]!,
        detail: 'sampled peak VmRSS during the login case (every 200 ms)',
        verdict: null,
      },
    ],
  };
}
