// Contract §5: every trick of a hostile or broken IMAP server (test/helpers/hostile-imap.ts), through
// the real app. Each ends in 403 {"detail": "Cannot log you in"} with the right failure class,
// within IMAP_TIMEOUT_MS (+ slack), with no socket left open on the server and no session; the
// readiness probe answers 503 naming imap for every trick it can meet.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BackendFailure } from '../../src/backends/authenticator.ts';
import { loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { makeTestCertificates, type TestCertificates } from '../helpers/certs.ts';
import { type HostileOptions, startHostileImap } from '../helpers/hostile-imap.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';

// IMAP_TIMEOUT_MS of the stalling tricks: only the deadline ends them, so it is kept short.
const TIMEOUT_MS = 1500;
// IMAP_TIMEOUT_MS of every other trick: it must be caught as what it is (its own reason, its own
// failure class), never by the deadline; a long deadline keeps a starved event loop on a loaded
// machine from turning a quick refusal into a timeout (it did once in CI: 1.5 s under load).
const PATIENT_TIMEOUT_MS = 30_000;
// How long the server may take to see its sockets closed (a wait, not a measure: the machine is shared).
const SLACK_MS = 2500;
const PASSWORD = 'pässwörd-of-alice';

interface Trick {
  readonly name: string;
  readonly server: HostileOptions;
  readonly security: 'tls' | 'starttls' | 'plain';
  readonly failure: BackendFailure;
  /** The answer comes only at the deadline (a stall). */
  readonly stalls?: boolean;
  /** The readiness probe meets this trick too (it sends no login). */
  readonly probe?: boolean;
  /** TLS never comes up: the password must not be on the wire at all. */
  readonly neverTls?: boolean;
  /** The reason the attempt must end with, where the class alone would not tell the mechanism. */
  readonly reason?: string;
}

const NO_PLAIN = 'IMAP4rev1 STARTTLS ID';
const TRICKS: readonly Trick[] = [
  {
    name: 'a PREAUTH greeting (plain)',
    server: { trick: 'preauth' },
    security: 'plain',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'a PREAUTH greeting before STARTTLS',
    server: { trick: 'preauth' },
    security: 'starttls',
    failure: 'upstream_misconfigured',
    probe: true,
    neverTls: true,
  },
  {
    name: 'an untagged OK in answer to the login',
    server: { trick: 'untagged-ok' },
    security: 'tls',
    failure: 'upstream_unavailable',
    stalls: true,
  },
  {
    name: "another tag's OK",
    server: { trick: 'foreign-tag', greetingCaps: false },
    security: 'tls',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'BYE instead of a greeting',
    server: { trick: 'bye', byeAt: 'GREETING' },
    security: 'tls',
    failure: 'upstream_unavailable',
    probe: true,
  },
  {
    name: 'BYE at CAPABILITY',
    server: { trick: 'bye', byeAt: 'CAPABILITY', greetingCaps: false },
    security: 'tls',
    failure: 'upstream_unavailable',
    probe: true,
  },
  {
    name: 'BYE at STARTTLS',
    server: { trick: 'bye', byeAt: 'STARTTLS' },
    security: 'starttls',
    failure: 'upstream_unavailable',
    probe: true,
    neverTls: true,
  },
  {
    name: 'BYE at AUTHENTICATE',
    server: { trick: 'bye', byeAt: 'AUTHENTICATE' },
    security: 'tls',
    failure: 'upstream_unavailable',
  },
  {
    name: 'BYE at LOGIN',
    server: { trick: 'bye', byeAt: 'LOGIN', caps: NO_PLAIN },
    security: 'tls',
    failure: 'upstream_unavailable',
  },
  {
    name: 'BYE at ID',
    server: { trick: 'bye', byeAt: 'ID' },
    security: 'tls',
    failure: 'upstream_unavailable',
  },
  {
    name: 'STARTTLS refused',
    server: { trick: 'starttls-refused' },
    security: 'starttls',
    failure: 'upstream_misconfigured',
    probe: true,
    neverTls: true,
  },
  {
    name: 'plaintext injected behind the STARTTLS OK',
    server: { trick: 'starttls-injection' },
    security: 'starttls',
    failure: 'upstream_misconfigured',
    probe: true,
    neverTls: true,
  },
  {
    // A literal announced behind the OK once left the reader waiting for its bytes, which then came
    // from inside TLS; it was refused only because the mangled answer broke later.
    name: 'a literal announced behind the STARTTLS OK',
    server: { trick: 'starttls-literal' },
    security: 'starttls',
    failure: 'upstream_misconfigured',
    reason: 'plaintext injected after STARTTLS',
    probe: true,
    neverTls: true,
  },
  {
    name: 'plaintext instead of the TLS handshake',
    server: { trick: 'starttls-plaintext' },
    security: 'starttls',
    failure: 'upstream_misconfigured',
    probe: true,
    neverTls: true,
  },
  {
    name: 'LOGINDISABLED appearing after STARTTLS',
    server: { tlsCaps: 'IMAP4rev1 LOGINDISABLED' },
    security: 'starttls',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'a literal asked for and never read',
    server: { trick: 'literal-never-read', caps: 'IMAP4rev1' },
    security: 'tls',
    failure: 'upstream_unavailable',
    stalls: true,
  },
  {
    name: 'endless continuation requests',
    server: { trick: 'endless-continuation', greetingCaps: false },
    security: 'tls',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'a 1 MiB line',
    server: { trick: 'huge-line' },
    security: 'tls',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'a 1 GB literal announced',
    server: { trick: 'huge-literal', greetingCaps: false },
    security: 'tls',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'a flood of untagged lines',
    server: { trick: 'untagged-flood', greetingCaps: false },
    security: 'tls',
    failure: 'upstream_misconfigured',
    probe: true,
  },
  {
    name: 'a greeting dripped a byte every 200 ms',
    server: { trick: 'slow-drip' },
    security: 'tls',
    failure: 'upstream_unavailable',
    stalls: true,
    probe: true,
  },
  {
    name: 'NO [UNAVAILABLE]',
    server: { trick: 'unavailable' },
    security: 'tls',
    failure: 'upstream_unavailable',
  },
  // `OKAY` and `OK[ALERT]` were once read as OK.
  {
    name: 'OKAY in answer to the login',
    server: { trick: 'status-okay' },
    security: 'tls',
    failure: 'upstream_misconfigured',
  },
  {
    name: 'OK[ALERT] in answer to the login',
    server: { trick: 'status-glued' },
    security: 'tls',
    failure: 'upstream_misconfigured',
  },
  {
    name: "OK with the client's own tag in another case",
    server: { trick: 'tag-case' },
    security: 'tls',
    failure: 'upstream_misconfigured',
  },
  {
    name: 'BAD in answer to the login',
    server: { trick: 'bad' },
    security: 'tls',
    failure: 'upstream_misconfigured',
  },
];

function lastAudit(t: TestApp): { outcome?: string; failure?: string; reason?: string } {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

describe('a hostile IMAP server', () => {
  let dir: string;
  let certs: TestCertificates;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-hostile-'));
    certs = await makeTestCertificates(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const appFor = (port: number, security: Trick['security'], timeoutMs: number) =>
    startTestApp({
      env: {
        IMAP_HOST: security === 'plain' ? '127.0.0.1' : 'localhost',
        IMAP_PORT: String(port),
        IMAP_SECURITY: security,
        IMAP_CA_FILE: certs.caFile,
        IMAP_TIMEOUT_MS: String(timeoutMs),
        ...(security === 'plain' ? {} : { IMAP_FORWARD_CLIENT_IP: 'true' }),
      },
    });

  for (const trick of TRICKS) {
    test(`${trick.name} (${trick.security}): 403 ${trick.failure}, in time, nothing open, no session`, async () => {
      const server = await startHostileImap({
        users: { alice: PASSWORD },
        cert: certs,
        implicitTls: trick.security === 'tls',
        ...trick.server,
      });
      const timeoutMs = trick.stalls === true ? TIMEOUT_MS : PATIENT_TIMEOUT_MS;
      const t = await appFor(server.port, trick.security, timeoutMs);
      try {
        const reference = referenceTimer(timeoutMs);
        const { response, sessionid } = await loginAs(t.fastify, 'alice', PASSWORD);
        reference.cancel();
        assert.equal(response.statusCode, 403, JSON.stringify(lastAudit(t)));
        assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
        assert.equal(sessionid, '');
        assert.equal(await t.stores.sessions.countActive(Date.now()), 0);
        const audit = lastAudit(t);
        assert.equal(audit.failure, trick.failure, JSON.stringify(audit));
        // Which mechanism ended the attempt, not a stopwatch: a stall only the deadline can end (a
        // broken deadline hangs to the test timeout), and not before it (a timer of its length
        // started first has fired); every other trick is caught as what it is, before the deadline.
        const deadline = `no answer within ${timeoutMs} ms`;
        if (trick.stalls === true) assert.equal(audit.reason, deadline, JSON.stringify(audit));
        else assert.notEqual(audit.reason, deadline, JSON.stringify(audit));
        if (trick.reason !== undefined) assert.equal(audit.reason, trick.reason, JSON.stringify(audit));
        assert.equal(reference.fired, trick.stalls === true, 'ended at the deadline exactly when stalled');
        if (trick.neverTls === true) {
          const sent = server.received();
          assert.ok(!sent.includes(PASSWORD), 'the password was sent in clear');
          assert.ok(!/AUTHENTICATE|LOGIN/i.test(sent), `the client sent: ${sent.slice(0, 200)}`);
        }
        await server.drained(timeoutMs + SLACK_MS);
        if (trick.probe === true) {
          const ready = await t.fastify.inject({ url: '/readyz' });
          assert.equal(ready.statusCode, 503);
          const body = ready.json();
          assert.deepEqual(body.failing, ['imap']);
          assert.ok(body.checks.imap.startsWith(`${trick.failure}: `), body.checks.imap);
          await server.drained(timeoutMs + SLACK_MS);
        }
      } finally {
        await t.close();
        await server.close();
      }
    });
  }

  test('LOGINDISABLED only before STARTTLS (and AUTH=PLAIN only after): logs in, capabilities re-read', async () => {
    const server = await startHostileImap({
      users: { alice: PASSWORD },
      cert: certs,
      caps: 'IMAP4rev1 STARTTLS LOGINDISABLED',
      tlsCaps: 'IMAP4rev1 AUTH=PLAIN SASL-IR',
    });
    const t = await appFor(server.port, 'starttls', PATIENT_TIMEOUT_MS);
    try {
      const { response } = await loginAs(t.fastify, 'alice', PASSWORD);
      assert.equal(response.statusCode, 200, JSON.stringify(lastAudit(t)));
      await server.drained();
      assert.deepEqual(
        server.commands.map((c) => c.split(' ')[1]),
        ['STARTTLS', 'CAPABILITY', 'AUTHENTICATE', 'LOGOUT'],
      );
      const ready = await t.fastify.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 200, ready.body);
      await server.drained();
    } finally {
      await t.close();
      await server.close();
    }
  });
});
