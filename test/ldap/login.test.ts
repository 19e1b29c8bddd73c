// Contract §8, the LDAP backend against a real OpenLDAP slapd: direct bind and search-then-bind over
// LDAPS and required StartTLS, awkward passwords and DNs, injection attempts, empty passwords,
// ambiguous matches, a wrong service account, and a directory that is down, hangs or presents a
// certificate we do not trust — each answered per §8 within the deadline, with nothing left open.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { VerifyResult } from '../../src/backends/authenticator.ts';
import type { BackendSpec } from '../../src/backends/build.ts';
import { createBackend } from '../../src/backends/build.ts';
import { ldapLoginOnce, probeLdap } from '../../src/backends/ldap/authenticator.ts';
import type { LdapSettings } from '../../src/backends/ldap/settings.ts';
import { backendTls } from '../../src/backends/tls.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';
import {
  DIRECTORY_USERS,
  directoryUser,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
} from '../helpers/slapd.ts';

/** The deadline the tests of a directory that never answers wait out. */
const TIMEOUT_MS = 1500;
/** Every other test's deadline: a directory on a machine loaded by other suites answers late. */
const ANSWER_MS = 15_000;

let slapd: Slapd;
before(async () => {
  slapd = await startSlapd();
});
after(async () => {
  await slapd?.stop();
});

function direct(overrides: Partial<LdapSettings> = {}): LdapSettings {
  return {
    url: `ldaps://localhost:${slapd.tlsPort}`,
    security: 'tls',
    allowPlaintext: false,
    caFile: slapd.caFile,
    userDn: `uid={username},${PEOPLE_DN}`,
    bindDn: null,
    bindPassword: null,
    baseDn: null,
    userFilter: '(uid={username})',
    timeoutMs: ANSWER_MS,
    maxConcurrency: 4,
    queueLimit: 10,
    ...overrides,
  };
}

function search(overrides: Partial<LdapSettings> = {}): LdapSettings {
  return direct({
    userDn: null,
    bindDn: SERVICE_DN,
    bindPassword: SERVICE_PASSWORD,
    baseDn: PEOPLE_DN,
    ...overrides,
  });
}

const starttls = (settings: LdapSettings): LdapSettings => ({
  ...settings,
  url: `ldap://localhost:${slapd.plainPort}`,
  security: 'starttls',
});

const login = (settings: LdapSettings, username: string, password: string) =>
  ldapLoginOnce(settings, backendTls('localhost', settings.caFile), username, password);

/** Runs `work` through a fault proxy in front of slapd's `port`; resolves once every connection closed. */
async function throughProxy<T>(
  port: number,
  work: (proxy: FaultProxy) => Promise<T>,
): Promise<{ result: T; proxy: FaultProxy }> {
  const proxy = await startFaultProxy(port);
  try {
    const result = await work(proxy);
    // The client closes its socket itself; the proxy sees it within moments.
    const until = Date.now() + 5000;
    while (proxy.openConnections() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    return { result, proxy };
  } finally {
    await proxy.close();
  }
}

const MODES = [
  ['direct bind over LDAPS', () => direct()],
  ['direct bind over StartTLS', () => starttls(direct())],
  ['search-then-bind over LDAPS', () => search()],
  ['search-then-bind over StartTLS', () => starttls(search())],
] as const;

for (const [mode, settings] of MODES) {
  describe(`LDAP ${mode}`, () => {
    test('every person with an awkward password or DN logs in with their password, and only with it', async () => {
      const people = DIRECTORY_USERS.filter((u) => u.username !== 'twin' && u.username !== 'disabled');
      for (const user of people) {
        assert.deepEqual(await login(settings(), user.username, user.password), { ok: true }, user.username);
        const wrong = await login(settings(), user.username, `${user.password}x`);
        assert.equal(wrong.ok ? 'ok' : wrong.failure, 'bad_credentials', user.username);
      }
    });

    test('an entry the ACL denies authentication is refused like a wrong password', async () => {
      const user = directoryUser('disabled');
      const result = await login(settings(), user.username, user.password);
      assert.equal(result.ok ? 'ok' : result.failure, 'bad_credentials');
    });

    test('injection attempts do not widen the bind or the search', async () => {
      const alice = directoryUser('alice').password;
      for (const username of [
        'al*',
        '*',
        '*)(uid=*))(|(uid=*',
        'alice)(uid=*',
        'alice,ou=people',
        'admin,ou=x',
        'alice\0',
        '$&',
        "$'",
        'alice+cn=x',
      ]) {
        const result = await login(settings(), username, alice);
        assert.equal(result.ok ? 'ok' : result.failure, 'bad_credentials', username);
      }
    });

    test('an empty password never reaches the directory', async () => {
      const { result, proxy } = await throughProxy(slapd.tlsPort, (p) =>
        login({ ...settings(), url: `ldaps://localhost:${p.port}`, security: 'tls' }, 'alice', ''),
      );
      assert.equal(result.ok ? 'ok' : result.failure, 'bad_credentials');
      assert.equal(proxy.accepted, 0);
    });

    test('the probe reaches the directory without user credentials', async () => {
      assert.deepEqual(await probeLdap(settings(), backendTls('localhost', slapd.caFile)), { ok: true });
    });
  });
}

describe('LDAP search-then-bind specifics', () => {
  test('two entries matching the filter refuse the login (bad_credentials), even with the right password', async () => {
    const result = await login(search(), 'twin', directoryUser('twin').password);
    assert.deepEqual(result, { ok: false, failure: 'bad_credentials', reason: 'several entries match' });
  });

  test('no entry matching the filter refuses the login', async () => {
    const result = await login(search(), 'nobody', 'whatever');
    assert.deepEqual(result, { ok: false, failure: 'bad_credentials', reason: 'no entry matches' });
  });

  test('a wrong service-account password is upstream_misconfigured, never bad_credentials', async () => {
    const result = await login(search({ bindPassword: 'wrong' }), 'alice', directoryUser('alice').password);
    assert.equal(result.ok ? 'ok' : result.failure, 'upstream_misconfigured');
    const probe = await probeLdap(search({ bindPassword: 'wrong' }), backendTls('localhost', slapd.caFile));
    assert.equal(probe.ok, false);
    assert.match(probe.ok ? '' : probe.reason, /service account bind refused/);
  });

  test('a custom filter with several placeholders escapes each', async () => {
    const settings = search({
      userFilter: '(&(objectClass=inetOrgPerson)(|(uid={username})(cn={username})))',
    });
    assert.deepEqual(await login(settings, "d'arcy+o,k", directoryUser("d'arcy+o,k").password), { ok: true });
    const wide = await login(settings, '*', directoryUser('alice').password);
    assert.equal(wide.ok ? 'ok' : wide.failure, 'bad_credentials');
  });
});

describe('LDAP outages and misconfigurations answer within the deadline and leave nothing open', () => {
  for (const [mode, port, security] of [
    ['LDAPS', () => slapd.tlsPort, 'tls'],
    ['StartTLS', () => slapd.plainPort, 'starttls'],
  ] as const) {
    test(`a directory that accepts and never answers (${mode}) is upstream_unavailable`, async () => {
      let firedAtAnswer = false;
      const { result, proxy } = await throughProxy(port(), async (p) => {
        p.setFault({ kind: 'stall' });
        const url = `${security === 'tls' ? 'ldaps' : 'ldap'}://localhost:${p.port}`;
        const reference = referenceTimer(TIMEOUT_MS);
        const answer = await login(
          search({ url, security, timeoutMs: TIMEOUT_MS }),
          'alice',
          directoryUser('alice').password,
        );
        firedAtAnswer = reference.fired;
        reference.cancel();
        return answer;
      });
      // Nothing is forwarded, so only the deadline can end it (a broken one hangs to the test
      // timeout), and the reason says it did; not before it: a timer of its length started first
      // had fired when the answer came.
      assert.ok(firedAtAnswer, 'gave up before the deadline');
      assert.deepEqual(result, {
        ok: false,
        failure: 'upstream_unavailable',
        reason: `no answer within ${TIMEOUT_MS} ms`,
      });
      assert.equal(proxy.accepted, 1);
      assert.equal(proxy.openConnections(), 0);
    });

    test(`a certificate from a CA we do not trust (${mode}) is upstream_misconfigured`, async () => {
      const { result, proxy } = await throughProxy(port(), async (p) => {
        const url = `${security === 'tls' ? 'ldaps' : 'ldap'}://localhost:${p.port}`;
        return login(direct({ url, security, caFile: null }), 'alice', directoryUser('alice').password);
      });
      assert.equal(result.ok ? 'ok' : result.failure, 'upstream_misconfigured');
      assert.match(result.ok ? '' : result.reason, /^TLS: /);
      assert.equal(proxy.openConnections(), 0);
    });

    test(`a certificate for another host name (${mode}) is upstream_misconfigured`, async () => {
      // The harness certificate names localhost and 127.0.0.1; checking it against another name must fail.
      const url = `${security === 'tls' ? 'ldaps' : 'ldap'}://localhost:${port()}`;
      const settings = direct({ url, security });
      const result = await ldapLoginOnce(
        settings,
        backendTls('ldap.other.example', slapd.caFile),
        'alice',
        'alice-password',
      );
      assert.equal(result.ok ? 'ok' : result.failure, 'upstream_misconfigured');
      assert.match(result.ok ? '' : result.reason, /ERR_TLS_CERT_ALTNAME_INVALID/);
    });
  }

  test('a directory that is down (connection refused) is upstream_unavailable, probe included', async () => {
    const proxy = await startFaultProxy(slapd.tlsPort);
    proxy.setFault({ kind: 'cut' });
    try {
      const settings = direct({ url: `ldaps://localhost:${proxy.port}` });
      // Ended by the connection's refusal (reset as soon as accepted), not left to the deadline,
      // whose reason would be "no answer within".
      const result = await login(settings, 'alice', directoryUser('alice').password);
      assert.equal(result.ok ? 'ok' : result.failure, 'upstream_unavailable');
      assert.match(result.ok ? '' : result.reason, /^(ECONNRESET|ECONNREFUSED|EPIPE)$/);
      const probe = await probeLdap(settings, backendTls('localhost', slapd.caFile));
      assert.equal(probe.ok, false);
      assert.match(probe.ok ? '' : probe.reason, /^upstream_unavailable/);
    } finally {
      await proxy.close();
    }
  });

  test('every attempt closes its connection: twenty logins leave no socket open', async () => {
    const { proxy } = await throughProxy(slapd.tlsPort, async (p) => {
      const settings = search({ url: `ldaps://localhost:${p.port}` });
      for (let i = 0; i < 10; i++) {
        await login(settings, 'alice', directoryUser('alice').password);
        await login(settings, 'alice', 'wrong');
      }
    });
    assert.equal(proxy.accepted, 20);
    assert.equal(proxy.openConnections(), 0);
  });
});

describe('the LDAP backend behind the shared guard (cap, queue, breaker)', () => {
  const spec = (port: number, overrides: Partial<LdapSettings> = {}): BackendSpec => ({
    kind: 'ldap',
    name: 'directory',
    domains: null,
    ldap: search({ url: `ldaps://localhost:${port}`, ...overrides }),
  });

  test('beyond the cap, attempts wait in the bounded queue; a full queue fails at once', async () => {
    const proxy = await startFaultProxy(slapd.tlsPort);
    proxy.setFault({ kind: 'stall' });
    const backend = createBackend(
      spec(proxy.port, { maxConcurrency: 1, queueLimit: 1, timeoutMs: TIMEOUT_MS }),
    );
    try {
      const first = backend.verify('alice', 'one', '127.0.0.1');
      const second = backend.verify('alice', 'two', '127.0.0.1');
      const settled: string[] = [];
      first.then(() => settled.push('first'));
      second.then(() => settled.push('second'));
      const third = await backend.verify('alice', 'three', '127.0.0.1');
      assert.deepEqual(third, { ok: false, failure: 'upstream_unavailable', reason: 'LDAP queue full' });
      // At once: the refusal came back while the slot and the queue place are still held (order of
      // events, not a stopwatch); a refusal that waited for a slot would come after them.
      assert.deepEqual(settled, [], 'a full queue answers at once');
      assert.deepEqual(backend.stats(), { active: 1, queued: 1, breaker: 'closed' });
      assert.equal(failureOf(await first), 'upstream_unavailable');
      assert.equal(failureOf(await second), 'upstream_unavailable');
    } finally {
      await proxy.close();
    }
  });

  test('after repeated outages the breaker fails fast without connecting', async () => {
    const proxy = await startFaultProxy(slapd.tlsPort);
    proxy.setFault({ kind: 'cut' });
    const backend = createBackend(spec(proxy.port));
    try {
      for (let i = 0; i < 5; i++) await backend.verify('alice', `try-${i}`, '127.0.0.1');
      const accepted = proxy.accepted;
      const result = await backend.verify('alice', 'again', '127.0.0.1');
      assert.deepEqual(result, { ok: false, failure: 'upstream_unavailable', reason: 'circuit open' });
      assert.equal(backend.stats().breaker, 'open');
      assert.equal(proxy.accepted, accepted);
    } finally {
      await proxy.close();
    }
  });
});

const failureOf = (result: VerifyResult) => (result.ok ? 'ok' : result.failure);

describe('a directory without TLS', () => {
  let bare: Slapd;
  before(async () => {
    bare = await startSlapd(DIRECTORY_USERS, { tls: false });
  });
  after(async () => {
    await bare?.stop();
  });
  const at = (security: 'starttls' | 'plain'): LdapSettings =>
    search({ url: `ldap://127.0.0.1:${bare.plainPort}`, security });

  test('required StartTLS that the server refuses is upstream_misconfigured, never a plain-text bind', async () => {
    const result = await ldapLoginOnce(
      at('starttls'),
      backendTls('127.0.0.1', bare.caFile),
      'alice',
      'alice-password',
    );
    assert.equal(failureOf(result), 'upstream_misconfigured');
    assert.match(result.ok ? '' : result.reason, /^StartTLS refused/);
    const probe = await probeLdap(at('starttls'), backendTls('127.0.0.1', bare.caFile));
    assert.match(probe.ok ? '' : probe.reason, /^upstream_misconfigured: StartTLS refused/);
  });

  test('plain text to loopback, as configured, logs in', async () => {
    const result = await ldapLoginOnce(at('plain'), backendTls('127.0.0.1', null), 'alice', 'alice-password');
    assert.deepEqual(result, { ok: true });
  });
});
