// Contract §12: a user who turned password sign-in off is refused a password like a wrong one — the
// same 403 and body, waiting as long as one of the backend's recent refusals of a wrong password
// (the refusal-timing method of timing.test.ts: the authenticator's clock moves only inside a login,
// by a duration this test picks, and every wait decided here is recorded as asked, then waited),
// counted by the throttle, and the mail server is never contacted: a counting relay stands in front
// of the real Dovecot, and it sees no connection for that user's attempts, right password or wrong.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { IMAP_REFUSAL_SEED_MS } from '../../src/backends/imap/backend.ts';
import { verifyImapLogin } from '../../src/backends/imap/client.ts';
import { RefusalTiming } from '../../src/backends/refusal-timing.ts';
import { loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { type ImapRelay, startImapRelay } from '../helpers/imap-relay.ts';
import { createPasskey, SoftAuthenticator } from '../helpers/webauthn.ts';

const ORIGIN = 'http://localhost:8000';
const STRANGER = '198.51.100.7';

/** RefusalTiming as the guard feeds it, with every duration it was given kept in order. */
class RecordedTiming extends RefusalTiming {
  readonly recorded: number[] = [];
  override record(ms: number): void {
    this.recorded.push(ms);
    super.record(ms);
  }
}

describe('password sign-in off (contract §12)', () => {
  let dovecot: Dovecot;
  let relay: ImapRelay;
  let t: TestApp;
  const timing = new RecordedTiming(IMAP_REFUSAL_SEED_MS);
  const clock = { ms: 0 };
  let nextDuration = 301;
  const waits: { ms: number; recordedBefore: number[] }[] = [];
  const imapLogins: string[] = [];

  before(async () => {
    dovecot = await startDovecot({ authFailureDelay: 1 });
    // The relay passes the TLS bytes through untouched: the certificate is still Dovecot's.
    relay = await startImapRelay(dovecot.tlsPort);
    t = await startTestApp({
      dovecot,
      env: {
        IMAP_PORT: String(relay.port),
        PUBLIC_URL: ORIGIN,
        THROTTLE_USER_FAILURES: '4',
        AUTH_FAILURE_DELAY_MS: '0',
      },
      imap: {
        timing,
        now: () => clock.ms,
        login: async (settings, tls, username, password, clientIp) => {
          const result = await verifyImapLogin(settings, tls, username, password, clientIp);
          nextDuration += 13;
          clock.ms += nextDuration;
          imapLogins.push(username);
          return result;
        },
      },
      loginNow: () => 0,
      sleep: async (ms) => {
        waits.push({ ms, recordedBefore: [...timing.recorded] });
        await sleep(ms);
      },
    });
  });
  after(async () => {
    await t?.close();
    await relay?.close();
    await dovecot?.stop();
  });

  test('the right and the wrong password: one 403, one kind of wait, no connection to the mail server, throttled', async () => {
    const alice = testUser('alice');
    const session = await loginAs(t.fastify, alice.username, alice.password);
    assert.equal(session.response.statusCode, 200);
    const { response } = await createPasskey(t.fastify, session, new SoftAuthenticator(ORIGIN));
    assert.equal(response.statusCode, 201, response.body);
    const off = await t.fastify.inject({
      method: 'PUT',
      url: '/api/auth/passkeys/settings',
      headers: { cookie: session.cookie, 'content-type': 'application/json' },
      payload: JSON.stringify({ password_sign_in: false }),
    });
    assert.equal(off.statusCode, 200, off.body);
    // Wrong passwords of another user reach Dovecot and teach the refusal timing its durations.
    for (let i = 0; i < 2; i++) {
      assert.equal((await loginAs(t.fastify, 'bob', `wrong-${i}-password`)).response.statusCode, 403);
    }
    const connections = relay.accepted;
    const loginsBefore = imapLogins.length;
    const waitsBefore = waits.length;

    const answers: { status: number; body: string }[] = [];
    for (const password of [alice.password, 'wrong-password', 'another-wrong-one', 'a-third-wrong-one']) {
      // From an address alice never signed in from: the owner's exemption (contract §3) does not apply.
      const { response: r } = await loginAs(t.fastify, alice.username, password, {}, STRANGER);
      answers.push({ status: r.statusCode, body: r.body });
    }
    assert.deepEqual(
      answers,
      Array.from({ length: 4 }, () => ({ status: 403, body: '{"detail":"Cannot log you in"}' })),
    );
    assert.equal(relay.accepted, connections, 'the mail server was never contacted');
    assert.equal(imapLogins.length, loginsBefore);
    // Each refusal waited as long as one of Dovecot's recent refusals of a wrong password.
    const mine = waits.slice(waitsBefore);
    assert.equal(mine.length, 4);
    for (const { ms, recordedBefore } of mine) {
      assert.ok(recordedBefore.length > 0);
      assert.ok(recordedBefore.includes(ms), `waited ${ms} ms, not one of ${recordedBefore.join(', ')}`);
    }
    // Four distinct refused passwords (a repeated one counts once): the fifth attempt, even the
    // right password, is throttled.
    const fifth = await loginAs(t.fastify, alice.username, alice.password, {}, STRANGER);
    assert.equal(fifth.response.statusCode, 429);
    assert.equal(relay.accepted, connections);
    const failures = t.logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter(
        (entry) =>
          entry['audit'] === 'login' && entry['username'] === 'alice' && entry['outcome'] === 'failure',
      )
      .map((entry) => entry['failure']);
    assert.deepEqual(failures, [
      'password_sign_in_off',
      'password_sign_in_off',
      'password_sign_in_off',
      'password_sign_in_off',
    ]);
  });
});
