// Issue 9: faults between clubhouse and Dovecot, injected by a TCP proxy: the greeting never comes,
// the TLS handshake stalls, a reset during AUTHENTICATE, 2 s latency on every packet. Each gives the
// contract's 403 within the deadline, leaks no socket, and the service recovers when the fault clears;
// the circuit breaker opens and closes as designed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loginAs, startTestApp, type TestApp } from './helpers/app.ts';
import { type Dovecot, startDovecot } from './helpers/dovecot.ts';
import { type FaultProxy, startFaultProxy } from './helpers/fault-proxy.ts';

const TIMEOUT_MS = 3000;

function lastAudit(t: TestApp): { failure?: string; reason?: string } {
  return (
    t.logs
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.audit === 'login')
      .at(-1) ?? {}
  );
}

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
    },
    {
      name: 'the TLS handshake stalls',
      app: () => tls,
      proxy: () => tlsProxy,
      fault: { kind: 'stall' } as const,
    },
    {
      name: 'a reset during AUTHENTICATE',
      app: () => plain,
      proxy: () => plainProxy,
      fault: { kind: 'reset-when', text: 'AUTHENTICATE' } as const,
    },
    {
      name: '2 s latency on every packet',
      app: () => tls,
      proxy: () => tlsProxy,
      fault: { kind: 'delay', ms: 2000 } as const,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: 403 within the deadline, nothing leaked, full recovery`, async () => {
      const t = c.app();
      const proxy = c.proxy();
      proxy.setFault(c.fault);
      const started = Date.now();
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      const elapsed = Date.now() - started;
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      assert.equal(lastAudit(t).failure, 'upstream_unavailable');
      assert.ok(elapsed <= TIMEOUT_MS + 1000, `answered after ${elapsed} ms`);
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
        IMAP_TIMEOUT_MS: '300',
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
