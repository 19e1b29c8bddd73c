// Contract §8: one authenticator contract suite, run against every backend kind on its real server
// (Dovecot for IMAP, slapd for LDAP in both bind modes). A new backend is done when it passes.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Backend } from '../../src/backends/authenticator.ts';
import type { BackendSpec } from '../../src/backends/build.ts';
import { createBackend } from '../../src/backends/build.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { startFaultProxy } from '../helpers/fault-proxy.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';
import {
  directoryUser,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
} from '../helpers/slapd.ts';

const TIMEOUT_MS = 1500;

interface Target {
  /** The implicit-TLS port to reach (the server's, or a fault proxy's in front of it). */
  port: number;
  /** null: system roots only (the harness CA is then untrusted). */
  caFile: string | null;
}

interface Subject {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** The server's own implicit-TLS port and CA. */
  target(): Target;
  spec(target: Target): BackendSpec;
  readonly user: { username: string; password: string };
  readonly nonAscii: { username: string; password: string };
}

function imapSubject(): Subject {
  let dovecot: Dovecot;
  return {
    name: 'IMAP (Dovecot)',
    async start() {
      dovecot = await startDovecot();
    },
    stop: () => dovecot.stop(),
    target: () => ({ port: dovecot.tlsPort, caFile: dovecot.caFile }),
    spec: ({ port, caFile }) => ({
      kind: 'imap',
      name: 'mail',
      domains: null,
      imap: {
        host: 'localhost',
        port,
        security: 'tls',
        allowPlaintext: false,
        caFile,
        timeoutMs: TIMEOUT_MS,
        maxConcurrency: 4,
        queueLimit: 10,
        forwardClientIp: false,
      },
    }),
    user: testUser('alice'),
    nonAscii: testUser('uma'),
  };
}

function ldapSubject(mode: 'direct' | 'search'): Subject {
  let slapd: Slapd;
  return {
    name: `LDAP (slapd, ${mode === 'direct' ? 'direct bind' : 'search-then-bind'})`,
    async start() {
      slapd = await startSlapd();
    },
    stop: () => slapd.stop(),
    target: () => ({ port: slapd.tlsPort, caFile: slapd.caFile }),
    spec: ({ port, caFile }) => ({
      kind: 'ldap',
      name: 'directory',
      domains: null,
      ldap: {
        url: `ldaps://localhost:${port}`,
        security: 'tls',
        allowPlaintext: false,
        caFile,
        userDn: mode === 'direct' ? `uid={username},${PEOPLE_DN}` : null,
        bindDn: mode === 'search' ? SERVICE_DN : null,
        bindPassword: mode === 'search' ? SERVICE_PASSWORD : null,
        baseDn: mode === 'search' ? PEOPLE_DN : null,
        userFilter: '(uid={username})',
        timeoutMs: TIMEOUT_MS,
        maxConcurrency: 4,
        queueLimit: 10,
      },
    }),
    user: { username: 'alice', password: directoryUser('alice').password },
    nonAscii: { username: 'uma', password: directoryUser('uma').password },
  };
}

const failure = (result: Awaited<ReturnType<Backend['verify']>>) => (result.ok ? 'ok' : result.failure);

for (const subject of [imapSubject(), ldapSubject('direct'), ldapSubject('search')]) {
  describe(`authenticator contract: ${subject.name}`, () => {
    let backend: Backend;
    before(async () => {
      await subject.start();
      backend = createBackend(subject.spec(subject.target()));
    });
    after(async () => {
      await backend?.close();
      await subject.stop();
    });

    test('the right password logs in', async () => {
      assert.equal(
        failure(await backend.verify(subject.user.username, subject.user.password, '127.0.0.1')),
        'ok',
      );
    });

    test('a non-ASCII password logs in', async () => {
      const { username, password } = subject.nonAscii;
      assert.equal(failure(await backend.verify(username, password, '127.0.0.1')), 'ok');
    });

    test('a wrong password, an unknown user and an empty password are bad_credentials', async () => {
      const { username, password } = subject.user;
      assert.equal(failure(await backend.verify(username, `${password}!`, '127.0.0.1')), 'bad_credentials');
      assert.equal(failure(await backend.verify('nobody-here', password, '127.0.0.1')), 'bad_credentials');
      assert.equal(failure(await backend.verify(username, '', '127.0.0.1')), 'bad_credentials');
    });

    test('the probe answers ok without user credentials', async () => {
      assert.deepEqual(await backend.probe(), { ok: true });
    });

    test('identical concurrent attempts share one connection (single-flight)', async () => {
      const proxy = await startFaultProxy(subject.target().port);
      const shared = createBackend(subject.spec({ ...subject.target(), port: proxy.port }));
      try {
        const { username, password } = subject.user;
        const results = await Promise.all(
          Array.from({ length: 5 }, () => shared.verify(username, password, '127.0.0.1')),
        );
        assert.deepEqual(results.map(failure), ['ok', 'ok', 'ok', 'ok', 'ok']);
        assert.equal(proxy.accepted, 1);
      } finally {
        await shared.close();
        await proxy.close();
      }
    });

    test('a server that is down is upstream_unavailable, and the probe says so', async () => {
      const proxy = await startFaultProxy(subject.target().port);
      proxy.setFault({ kind: 'cut' });
      const down = createBackend(subject.spec({ ...subject.target(), port: proxy.port }));
      try {
        assert.equal(
          failure(await down.verify(subject.user.username, subject.user.password, '127.0.0.1')),
          'upstream_unavailable',
        );
        assert.equal((await down.probe()).ok, false);
      } finally {
        await proxy.close();
      }
    });

    test('a server that accepts and never answers is upstream_unavailable within the deadline, nothing left open', async () => {
      const proxy = await startFaultProxy(subject.target().port);
      proxy.setFault({ kind: 'stall' });
      const hanging = createBackend(subject.spec({ ...subject.target(), port: proxy.port }));
      try {
        // The proxy forwards nothing, so only the backend's own deadline can end either wait (a broken
        // deadline hangs until the test timeout): each says so in its reason.
        // Not before it, either: a timer of the deadline's length started first has fired.
        const deadline = `no answer within ${TIMEOUT_MS} ms`;
        const reference = referenceTimer(TIMEOUT_MS);
        const result = await hanging.verify(subject.user.username, subject.user.password, '127.0.0.1');
        reference.cancel();
        assert.ok(reference.fired, 'gave up before the deadline');
        assert.deepEqual(result, { ok: false, failure: 'upstream_unavailable', reason: deadline });
        const probe = await hanging.probe();
        assert.ok(!probe.ok && probe.reason.endsWith(deadline), JSON.stringify(probe));
        const until = Date.now() + 5000;
        while (proxy.openConnections() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        assert.equal(proxy.openConnections(), 0);
      } finally {
        await proxy.close();
      }
    });

    test('a certificate from an untrusted CA is upstream_misconfigured', async () => {
      const untrusted = createBackend(subject.spec({ ...subject.target(), caFile: null }));
      const result = await untrusted.verify(subject.user.username, subject.user.password, '127.0.0.1');
      assert.equal(failure(result), 'upstream_misconfigured');
      assert.equal((await untrusted.probe()).ok, false);
    });

    test('stats report the guard, and close resolves', async () => {
      assert.deepEqual(backend.stats(), { active: 0, queued: 0, breaker: 'closed' });
      await backend.close();
    });
  });
}
