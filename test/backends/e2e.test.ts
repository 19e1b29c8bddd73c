// Contract §8 end to end through the login API: an AUTH_CONFIG chain of a real slapd (search-then-
// bind over LDAPS) and two real Dovecots chosen by mail domain; the environment's LDAP settings
// (direct bind over StartTLS); the audit line, the login metric and /readyz naming the backend.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createAuthenticator } from '../../src/backends/build.ts';
import { servingBackends } from '../../src/config/backends/chain.ts';
import { loadConfig } from '../../src/config/config.ts';
import { loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { type Dovecot, startDovecot } from '../helpers/dovecot.ts';
import { recordSecrets } from '../helpers/secrets.ts';
import {
  directoryUser,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
} from '../helpers/slapd.ts';

const STAFF = [{ username: 'ann@staff.example', password: 'ann-staff-password' }];
const PUPILS = [{ username: 'ben@pupils.example', password: 'ben-pupils-pässword' }];

/** A test app whose authenticator is built from `env` exactly as the server builds it. */
async function appWith(env: Record<string, string>): Promise<TestApp> {
  const config = loadConfig(env);
  const authenticator = createAuthenticator(servingBackends(config.auth.backends), { probeTtlMs: 0 });
  return startTestApp({ env, authenticator });
}

function lastAudit(t: TestApp): Record<string, unknown> {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

describe('AUTH_CONFIG: a directory and two mail servers by domain', () => {
  let slapd: Slapd;
  let staff: Dovecot;
  let pupils: Dovecot;
  let t: TestApp;
  before(async () => {
    // The service account's password travels in the AUTH_CONFIG file only, never in any output.
    recordSecrets(SERVICE_PASSWORD);
    [slapd, staff, pupils] = await Promise.all([
      startSlapd(),
      startDovecot({ users: STAFF }),
      startDovecot({ users: PUPILS }),
    ]);
    const file = join(slapd.dir, 'auth.json');
    const imap = (name: string, dovecot: Dovecot, domain: string) => ({
      name,
      kind: 'imap',
      host: 'localhost',
      port: dovecot.tlsPort,
      caFile: dovecot.caFile,
      timeoutMs: 10_000,
      domains: [domain],
    });
    writeFileSync(
      file,
      JSON.stringify({
        backends: [
          {
            name: 'directory',
            kind: 'ldap',
            url: `ldaps://localhost:${slapd.tlsPort}`,
            caFile: slapd.caFile,
            bindDn: SERVICE_DN,
            bindPassword: SERVICE_PASSWORD,
            baseDn: PEOPLE_DN,
            timeoutMs: 10_000,
          },
          imap('staff-mail', staff, 'staff.example'),
          imap('pupils-mail', pupils, 'pupils.example'),
        ],
      }),
    );
    t = await appWith({ AUTH_CONFIG: file });
  });
  after(async () => {
    await t?.close();
    await Promise.all([slapd?.stop(), staff?.stop(), pupils?.stop()]);
  });

  test('a directory user logs in through LDAP; the audit line and the metric name the backend', async () => {
    const { response } = await loginAs(t.fastify, 'alice', directoryUser('alice').password);
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, '"alice"');
    assert.equal(lastAudit(t)['backend'], 'directory');
    const metrics = (await t.fastify.inject({ url: '/metrics' })).body;
    assert.match(
      metrics,
      /clubhouse_login_attempts_total\{outcome="success",failure="",backend="directory"\} 1/,
    );
  });

  test('mail users log in at the mail server of their domain', async () => {
    const ann = await loginAs(t.fastify, 'ann@staff.example', 'ann-staff-password');
    assert.equal(ann.response.statusCode, 200);
    assert.equal(lastAudit(t)['backend'], 'staff-mail');
    const ben = await loginAs(t.fastify, 'ben@pupils.example', 'ben-pupils-pässword');
    assert.equal(ben.response.statusCode, 200);
    assert.equal(lastAudit(t)['backend'], 'pupils-mail');
  });

  test("a password is checked only where the username's domain points", async () => {
    // ann's password is right at staff-mail, but ann@pupils.example is asked at pupils-mail only.
    const { response } = await loginAs(t.fastify, 'ann@pupils.example', 'ann-staff-password');
    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
    assert.equal(lastAudit(t)['failure'], 'bad_credentials');
    assert.equal(lastAudit(t)['backend'], 'pupils-mail');
  });

  test('/readyz probes every backend and names the failing one', async () => {
    const ready = await t.fastify.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.deepEqual(ready.json().checks, {
      stores: 'ok',
      directory: 'ok',
      'staff-mail': 'ok',
      'pupils-mail': 'ok',
    });
    await pupils.stop();
    const failing = await t.fastify.inject({ url: '/readyz' });
    assert.equal(failing.statusCode, 503);
    assert.deepEqual(failing.json().failing, ['pupils-mail']);
  });

  test('a mail server that is down answers 403 without locking its users out', async () => {
    for (let i = 0; i < 7; i++) {
      const { response } = await loginAs(t.fastify, 'ben@pupils.example', 'ben-pupils-pässword');
      assert.equal(response.statusCode, 403, `attempt ${i + 1}`);
      assert.equal(lastAudit(t)['failure'], 'upstream_unavailable');
    }
  });
});

describe('AUTH_BACKENDS=ldap from the environment: direct bind over required StartTLS', () => {
  let slapd: Slapd;
  let t: TestApp;
  before(async () => {
    slapd = await startSlapd();
    t = await appWith({
      AUTH_BACKENDS: 'ldap',
      LDAP_URL: `ldap://localhost:${slapd.plainPort}`,
      LDAP_CA_FILE: slapd.caFile,
      LDAP_USER_DN: `uid={username},${PEOPLE_DN}`,
      LDAP_TIMEOUT_MS: '10000',
    });
  });
  after(async () => {
    await t?.close();
    await slapd?.stop();
  });

  test('a user with a non-ASCII password logs in; a wrong password is refused', async () => {
    const uma = await loginAs(t.fastify, 'uma', directoryUser('uma').password);
    assert.equal(uma.response.statusCode, 200);
    assert.equal(lastAudit(t)['backend'], 'ldap');
    const wrong = await loginAs(t.fastify, 'uma', 'wrong');
    assert.equal(wrong.response.statusCode, 403);
    assert.equal(lastAudit(t)['failure'], 'bad_credentials');
  });

  test('/readyz names the directory', async () => {
    const ready = await t.fastify.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().status, 'ready');
    assert.deepEqual(ready.json().checks, { stores: 'ok', ldap: 'ok' });
  });
});
