// Contract §5 and docs/reliability.md: an IMAP server that is down, hangs, resets or stalls
// mid-authentication gives a 403 within the deadline, leaves no socket open, never crashes the
// process, and the service recovers when the fault clears; the circuit breaker opens and closes as
// designed. Two ways: fake servers that misbehave (helpers/fake-imap.ts), and a TCP fault proxy in
// front of the real Dovecot (the greeting never comes, the TLS handshake stalls, a reset during
// AUTHENTICATE, 2 s latency on every packet). Also: x-originating-ip forwarding.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { makeTestCertificates, type TestCertificates } from '../helpers/certs.ts';
import { type Dovecot, startDovecot } from '../helpers/dovecot.ts';
import { startFakeImap } from '../helpers/fake-imap.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { freePort } from '../helpers/ports.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';

function lastAudit(t: TestApp): { failure?: string; reason?: string } {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

const pick = ({ failure, reason }: { failure?: string; reason?: string }) => ({ failure, reason });

const plainTo = (port: number, timeoutMs = 1000) => ({
  IMAP_HOST: '127.0.0.1',
  IMAP_PORT: String(port),
  IMAP_SECURITY: 'plain',
  IMAP_TIMEOUT_MS: String(timeoutMs),
});

describe('IMAP faults', () => {
  test('IMAP down (port closed): 403 without waiting for the deadline, classified upstream_unavailable', async () => {
    const t = await startTestApp({ env: plainTo(await freePort(), 20_000) });
    try {
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      // Ended by the refused connection, not by the 20 s deadline (whose reason is "no answer within").
      assert.deepEqual(pick(lastAudit(t)), { failure: 'upstream_unavailable', reason: 'ECONNREFUSED' });
    } finally {
      await t.close();
    }
  });

  test('IMAP hanging (accepts, never greets): 403 within IMAP_TIMEOUT_MS + 1 s, no socket left open', async () => {
    const silent = await startFakeImap('silent');
    const t = await startTestApp({ env: plainTo(silent.port, 1000) });
    try {
      const reference = referenceTimer(1000);
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      reference.cancel();
      assert.equal(response.statusCode, 403);
      // The server never greets, so only the deadline can end the wait (a broken one hangs to the
      // test timeout), and the audit line says it did; not before it: a timer of the deadline's
      // length started first has fired (helpers/reference-timer.ts).
      assert.ok(reference.fired, 'gave up before the deadline');
      assert.deepEqual(pick(lastAudit(t)), {
        failure: 'upstream_unavailable',
        reason: 'no answer within 1000 ms',
      });
      assert.equal(silent.accepted, 1);
      await silent.drained();
      assert.equal(silent.openSockets(), 0);
    } finally {
      await t.close();
      await silent.close();
    }
  });

  test('a connection reset during authentication: 403, and the process carries on', async () => {
    const resetting = await startFakeImap('reset-on-auth');
    const t = await startTestApp({ env: plainTo(resetting.port, 5000) });
    try {
      for (let i = 0; i < 3; i++) {
        const { response } = await loginAs(t.fastify, 'alice', `password-${i}`);
        assert.equal(response.statusCode, 403);
        assert.equal(lastAudit(t).failure, 'upstream_unavailable');
      }
      assert.ok(resetting.received.join('').includes('AUTHENTICATE'), 'the reset came during authentication');
      const health = await t.fastify.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 200);
      await resetting.drained();
    } finally {
      await t.close();
      await resetting.close();
    }
  });

  test('STARTTLS required but not offered: the password is never sent', async () => {
    const server = await startFakeImap('no-starttls');
    const t = await startTestApp({ env: { ...plainTo(server.port, 5000), IMAP_SECURITY: 'starttls' } });
    try {
      const { response } = await loginAs(t.fastify, 'alice', 'secret-never-sent');
      assert.equal(response.statusCode, 403);
      assert.equal(lastAudit(t).failure, 'upstream_misconfigured');
      const sent = server.received.join('');
      assert.ok(!sent.includes('secret-never-sent'));
      assert.ok(!sent.includes(Buffer.from('\0alice\0secret-never-sent').toString('base64')));
      assert.ok(!/AUTHENTICATE|LOGIN/i.test(sent), `the client sent: ${sent}`);
    } finally {
      await t.close();
      await server.close();
    }
  });
});

describe('IMAP_FORWARD_CLIENT_IP over TLS', () => {
  let dir: string;
  let certs: TestCertificates;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-fake-imap-'));
    certs = await makeTestCertificates(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const forward of [true, false]) {
    test(`${forward ? 'sends' : 'does not send'} the client IP in the ID command`, async () => {
      const server = await startFakeImap('record', certs);
      const t = await startTestApp({
        env: {
          IMAP_HOST: 'localhost',
          IMAP_PORT: String(server.port),
          IMAP_SECURITY: 'tls',
          IMAP_CA_FILE: certs.caFile,
          IMAP_FORWARD_CLIENT_IP: String(forward),
        },
      });
      try {
        const response = await t.fastify.inject({
          method: 'POST',
          url: '/api/auth/login',
          remoteAddress: '203.0.113.77',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username: 'alice', password: 'pw' }),
        });
        assert.equal(response.statusCode, 403);
        const id =
          server.received
            .join('')
            .split('\r\n')
            .find((line) => / ID /i.test(line)) ?? '';
        assert.equal(id.includes('"x-originating-ip" "203.0.113.77"'), forward, id);
      } finally {
        await t.close();
        await server.close();
      }
    });
  }
});

const TIMEOUT_MS = 3000;
const DEADLINE = `no answer within ${TIMEOUT_MS} ms`;

async function drained(proxy: FaultProxy): Promise<void> {
  for (let i = 0; i < 150 && proxy.openConnections() > 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(proxy.openConnections(), 0, 'no IMAP connection is left open');
}

describe('IMAP faults through a proxy', () => {
  let dovecot: Dovecot;
  let tlsProxy: FaultProxy;
  let plainProxy: FaultProxy;
  let tls: TestApp;
  let plain: TestApp;
  before(async () => {
    dovecot = await startDovecot();
    tlsProxy = await startFaultProxy(dovecot.tlsPort);
    plainProxy = await startFaultProxy(dovecot.plainPort);
    const common = {
      IMAP_HOST: 'localhost',
      IMAP_CA_FILE: dovecot.caFile,
      IMAP_TIMEOUT_MS: String(TIMEOUT_MS),
    };
    tls = await startTestApp({
      dovecot,
      env: { ...common, IMAP_PORT: String(tlsProxy.port), IMAP_SECURITY: 'tls' },
    });
    plain = await startTestApp({
      dovecot,
      env: { ...common, IMAP_PORT: String(plainProxy.port), IMAP_SECURITY: 'plain' },
    });
  });
  after(async () => {
    await Promise.all([tls.close(), plain.close()]);
    await Promise.all([tlsProxy.close(), plainProxy.close()]);
    await dovecot.stop();
  });

  const cases = [
    {
      name: 'the greeting never arrives',
      app: () => plain,
      proxy: () => plainProxy,
      fault: { kind: 'stall' } as const,
      reason: DEADLINE,
    },
    {
      name: 'the TLS handshake stalls',
      app: () => tls,
      proxy: () => tlsProxy,
      fault: { kind: 'stall' } as const,
      reason: DEADLINE,
    },
    {
      name: 'a reset during AUTHENTICATE',
      app: () => plain,
      proxy: () => plainProxy,
      fault: { kind: 'reset-when', text: 'AUTHENTICATE' } as const,
      reason: 'ECONNRESET',
    },
    {
      name: '2 s latency on every packet',
      app: () => tls,
      proxy: () => tlsProxy,
      fault: { kind: 'delay', ms: 2000 } as const,
      reason: DEADLINE,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: 403 within the deadline, nothing leaked, full recovery`, async () => {
      const t = c.app();
      const proxy = c.proxy();
      proxy.setFault(c.fault);
      const reference = referenceTimer(TIMEOUT_MS);
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      reference.cancel();
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      // What ended the attempt: the deadline for a stall or a crawl (a broken one hangs to the test
      // timeout), and not before it (a timer of its length started first has fired); the reset
      // itself for a reset, before the deadline.
      assert.equal(reference.fired, c.reason === DEADLINE, 'ended at the deadline exactly when stalled');
      assert.deepEqual(pick(lastAudit(t)), { failure: 'upstream_unavailable', reason: c.reason });
      proxy.setFault({ kind: 'none' });
      await drained(proxy);
      const health = await t.fastify.inject({ url: '/healthz' });
      assert.equal(health.statusCode, 200, 'the process is alive');
      const ok = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(ok.response.statusCode, 200, 'works again once the fault clears');
    });
  }

  test('the circuit breaker opens after 5 outages, fails fast, and closes after a good probe', async () => {
    const t = await startTestApp({
      dovecot,
      env: {
        IMAP_HOST: 'localhost',
        IMAP_PORT: String(plainProxy.port),
        IMAP_SECURITY: 'plain',
        // Long enough for the good probe's real login on a loaded machine, short for the stalls.
        IMAP_TIMEOUT_MS: '1500',
      },
    });
    try {
      plainProxy.setFault({ kind: 'stall' });
      for (let i = 0; i < 5; i++) await loginAs(t.fastify, 'alice', `guess-${i}`);
      const accepted = plainProxy.accepted;
      const fast = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(fast.response.statusCode, 403);
      assert.equal(lastAudit(t).reason, 'circuit open');
      assert.equal(plainProxy.accepted, accepted, 'no connection while open');
      const metrics = await t.fastify.inject({ url: '/metrics' });
      assert.match(metrics.body, /^clubhouse_imap_circuit_state 2$/m);
      plainProxy.setFault({ kind: 'none' });
      await drained(plainProxy);
      // The breaker stays open for 5 s, then lets one probe through.
      await new Promise((resolve) => setTimeout(resolve, 5100));
      const probe = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(probe.response.statusCode, 200);
      const closed = await t.fastify.inject({ url: '/metrics' });
      assert.match(closed.body, /^clubhouse_imap_circuit_state 0$/m);
    } finally {
      plainProxy.setFault({ kind: 'none' });
      await t.close();
    }
  });
});
