// An on-path attacker in front of the real Dovecot, and servers that need literals. A forged
// `* PREAUTH` greeting before STARTTLS (the rest relayed untouched, so the certificate verifies) must
// never log anyone in (contract §5). Without AUTH=PLAIN, a non-ASCII password goes in a literal, so
// strict servers accept the right password.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dovecotEnv, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { makeTestCertificates } from '../helpers/certs.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { startHostileImap } from '../helpers/hostile-imap.ts';
import { type ImapRelay, startImapRelay } from '../helpers/imap-relay.ts';

function lastAudit(t: TestApp): { outcome?: string; failure?: string; reason?: string } {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

describe('a forged PREAUTH greeting in front of the real Dovecot (IMAP_SECURITY=starttls)', () => {
  let dovecot: Dovecot;
  let relay: ImapRelay;
  let t: TestApp;
  before(async () => {
    dovecot = await startDovecot();
    relay = await startImapRelay(dovecot.plainPort, {
      greeting: '* PREAUTH [CAPABILITY IMAP4rev1 STARTTLS] forged: you are logged in',
    });
    t = await startTestApp({
      dovecot,
      env: { ...dovecotEnv(dovecot, 'starttls'), IMAP_PORT: String(relay.port), IMAP_TIMEOUT_MS: '5000' },
    });
  });
  after(async () => {
    await t.close();
    await relay.close();
    await dovecot.stop();
  });

  for (const [who, username, password] of [
    ['alice with a wrong password', 'alice', 'not-alices-password'],
    ['a user that does not exist', 'mallory', 'anything'],
    ['alice with her right password', 'alice', testUser('alice').password],
  ] as const) {
    test(`${who}: 403, upstream_misconfigured, no session`, async () => {
      const { response, sessionid } = await loginAs(t.fastify, username, password);
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      assert.equal(sessionid, '');
      assert.equal(await t.stores.sessions.countActive(Date.now()), 0);
      // Refused for the forged greeting itself, at once: not left to the 5 s deadline, which would
      // say upstream_unavailable, "no answer within 5000 ms".
      assert.deepEqual(
        { failure: lastAudit(t).failure, reason: lastAudit(t).reason },
        { failure: 'upstream_misconfigured', reason: 'PREAUTH greeting' },
      );
      await relay.drained();
    });
  }
});

describe('LOGIN with literals when AUTH=PLAIN is not offered', () => {
  test('a strict scripted server (no AUTH=PLAIN, no LITERAL+, 8-bit quoted strings refused): pässwörd logs in', async () => {
    const password = testUser('uma').password;
    const server = await startHostileImap({
      caps: 'IMAP4rev1',
      strictQuoted: true,
      users: { uma: password },
    });
    const t = await startTestApp({
      env: { IMAP_HOST: '127.0.0.1', IMAP_PORT: String(server.port), IMAP_SECURITY: 'plain' },
    });
    try {
      const { response } = await loginAs(t.fastify, 'uma', password);
      assert.equal(response.statusCode, 200, JSON.stringify(lastAudit(t)));
      assert.equal(response.body, '"uma"');
      await server.drained();
    } finally {
      await t.close();
      await server.close();
    }
  });

  test('a strict scripted server over STARTTLS with LITERAL+: the quoted-string specials and UTF-8 both log in', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'clubhouse-literal-'));
    const certs = await makeTestCertificates(dir);
    const users = { uma: testUser('uma').password, quinn: testUser('quinn').password };
    const server = await startHostileImap({
      caps: 'IMAP4rev1 STARTTLS LITERAL+',
      strictQuoted: true,
      users,
      cert: certs,
    });
    const t = await startTestApp({
      env: {
        IMAP_HOST: 'localhost',
        IMAP_PORT: String(server.port),
        IMAP_SECURITY: 'starttls',
        IMAP_CA_FILE: certs.caFile,
      },
    });
    try {
      for (const [username, password] of Object.entries(users)) {
        const { response } = await loginAs(t.fastify, username, password);
        assert.equal(response.statusCode, 200, `${username}: ${JSON.stringify(lastAudit(t))}`);
      }
      await server.drained();
    } finally {
      await t.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the real Dovecot with AUTH=PLAIN, SASL-IR and LITERAL+ hidden: every awkward password logs in', async () => {
    const dovecot = await startDovecot();
    const hide = (text: string) => text.replace(/ (AUTH=PLAIN|SASL-IR|LITERAL\+)/g, '');
    const relay = await startImapRelay(dovecot.plainPort, { rewrite: hide });
    const t = await startTestApp({
      dovecot,
      env: { ...dovecotEnv(dovecot, 'plain'), IMAP_HOST: '127.0.0.1', IMAP_PORT: String(relay.port) },
    });
    try {
      // Not `long`: Dovecot's login process reads a LOGIN command into a 1 KiB buffer ("Input buffer
      // full, aborting"); AUTHENTICATE PLAIN, used whenever offered, has no such limit.
      for (const username of ['uma', 'quinn', 'percy']) {
        const { response } = await loginAs(t.fastify, username, testUser(username).password);
        assert.equal(response.statusCode, 200, `${username}: ${JSON.stringify(lastAudit(t))}`);
      }
      const wrong = await loginAs(t.fastify, 'uma', 'pässwörd-wrong');
      assert.equal(wrong.response.statusCode, 403);
      assert.equal(lastAudit(t).failure, 'bad_credentials');
      await relay.drained();
    } finally {
      await t.close();
      await relay.close();
      await dovecot.stop();
    }
  });
});
