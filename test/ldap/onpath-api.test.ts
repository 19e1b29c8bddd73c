// StartTLS injection (docs/security.md: the LDAP path), through the login API on every store: the
// service configured with LDAP_URL=ldap://… (required StartTLS, direct bind) behind an on-path relay
// that injects the start of a forged BindResponse(success) behind the StartTLS answer
// (test/helpers/ldap-relay.ts). Before the fix this logged in a wrong password and a user the
// directory does not have; now: 403 {"detail": "Cannot log you in"}, no sessionid cookie, nothing
// stored, the audit line `upstream_misconfigured`, and /readyz 503 naming the directory. A relay that
// only relays is harmless: the right password logs in through it.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAuthenticator } from '../../src/backends/build.ts';
import { servingBackends } from '../../src/config/backends/chain.ts';
import { loadConfig } from '../../src/config/config.ts';
import { loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { forgedSuccessPrefix, type LdapRelay, startLdapRelay } from '../helpers/ldap-relay.ts';
import { directoryUser, PEOPLE_DN, type Slapd, startSlapd } from '../helpers/slapd.ts';
import { describeEachStore } from '../helpers/stores.ts';

// Long, so that a loaded machine never turns the quick refusal into a timeout.
const PATIENT_TIMEOUT_MS = 30_000;
const SLACK_MS = 2500;
const INJECTED = 'plaintext injected behind the StartTLS answer';

let slapd: Slapd;
before(async () => {
  slapd = await startSlapd();
});
after(async () => {
  await slapd?.stop();
});

function lastAudit(t: TestApp): { outcome?: string; failure?: string; reason?: string; backend?: string } {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

describeEachStore('StartTLS injection through the login API (LDAP_URL=ldap://, direct bind)', (store) => {
  let relay: LdapRelay;
  let control: LdapRelay;
  let t: TestApp;
  let harmless: TestApp;
  const envFor = (port: number) => ({
    AUTH_BACKENDS: 'ldap',
    LDAP_URL: `ldap://localhost:${port}`,
    LDAP_CA_FILE: slapd.caFile,
    LDAP_USER_DN: `uid={username},${PEOPLE_DN}`,
    LDAP_TIMEOUT_MS: String(PATIENT_TIMEOUT_MS),
  });
  const appAt = (port: number) => {
    const env = envFor(port);
    const authenticator = createAuthenticator(servingBackends(loadConfig(env).auth.backends), {
      probeTtlMs: 0,
    });
    return startTestApp({ store, env, authenticator });
  };
  before(async () => {
    relay = await startLdapRelay(slapd.plainPort, { inject: (id) => forgedSuccessPrefix(id + 1) });
    control = await startLdapRelay(slapd.plainPort);
    t = await appAt(relay.port);
    harmless = await appAt(control.port);
  });
  after(async () => {
    await t?.close();
    await harmless?.close();
    await relay?.close();
    await control?.close();
  });

  for (const [who, username, password] of [
    ['alice with a wrong password', 'alice', 'not-alices-password'],
    ['a user the directory does not have', 'mallory', 'anything'],
  ] as const) {
    test(`${who}: 403, no session cookie, nothing stored, audited upstream_misconfigured`, async () => {
      const { response, sessionid } = await loginAs(t.fastify, username, password);
      assert.equal(response.statusCode, 403, JSON.stringify(lastAudit(t)));
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      assert.equal(sessionid, '');
      assert.ok(!String(response.headers['set-cookie'] ?? '').includes('sessionid='));
      assert.equal(await t.stores.sessions.countActive(Date.now()), 0);
      const audit = lastAudit(t);
      assert.deepEqual(
        { outcome: audit.outcome, failure: audit.failure, reason: audit.reason, backend: audit.backend },
        { outcome: 'failure', failure: 'upstream_misconfigured', reason: INJECTED, backend: 'ldap' },
      );
      await relay.drained(SLACK_MS);
    });
  }

  test('/readyz is 503 and names the directory', async () => {
    const ready = await t.fastify.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.deepEqual(ready.json().failing, ['ldap']);
    assert.equal(ready.json().checks.ldap, `upstream_misconfigured: ${INJECTED}`);
    await relay.drained(SLACK_MS);
  });

  test('through a relay that only relays, the right password logs in', async () => {
    const { response, sessionid } = await loginAs(harmless.fastify, 'alice', directoryUser('alice').password);
    assert.equal(response.statusCode, 200, JSON.stringify(lastAudit(harmless)));
    assert.equal(response.body, '"alice"');
    assert.notEqual(sessionid, '');
    const ready = await harmless.fastify.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200, ready.body);
    await control.drained(SLACK_MS);
  });
});
