// Contract §5: an IMAP server that is down, hangs, or resets mid-authentication gives a 403 within
// the deadline, leaves no socket open and never crashes the process; x-originating-ip forwarding.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loginAs, startTestApp, type TestApp } from './helpers/app.ts';
import { makeTestCertificates, type TestCertificates } from './helpers/certs.ts';
import { startFakeImap } from './helpers/fake-imap.ts';
import { freePort } from './helpers/ports.ts';

function lastAudit(t: TestApp): { failure?: string; reason?: string } {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

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
      const started = Date.now();
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
      assert.ok(Date.now() - started < 20_000, 'a refused connection does not wait for IMAP_TIMEOUT_MS');
      assert.equal(lastAudit(t).failure, 'upstream_unavailable');
    } finally {
      await t.close();
    }
  });

  test('IMAP hanging (accepts, never greets): 403 within IMAP_TIMEOUT_MS + 1 s, no socket left open', async () => {
    const silent = await startFakeImap('silent');
    const t = await startTestApp({ env: plainTo(silent.port, 1000) });
    try {
      const started = Date.now();
      const { response } = await loginAs(t.fastify, 'alice', 'alice-password');
      const elapsed = Date.now() - started;
      assert.equal(response.statusCode, 403);
      assert.ok(elapsed >= 900, `gave up after ${elapsed} ms, before the deadline`);
      assert.ok(elapsed <= 2000, `took ${elapsed} ms`);
      assert.equal(lastAudit(t).failure, 'upstream_unavailable');
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

  test('repeated outages open the circuit breaker: later attempts fail fast without connecting', async () => {
    const silent = await startFakeImap('silent');
    const t = await startTestApp({ env: plainTo(silent.port, 300) });
    try {
      for (let i = 0; i < 5; i++) await loginAs(t.fastify, `user${i}`, 'pw');
      assert.equal(silent.accepted, 5);
      const { response } = await loginAs(t.fastify, 'alice', 'pw');
      assert.equal(response.statusCode, 403);
      assert.equal(lastAudit(t).reason, 'circuit open');
      assert.equal(silent.accepted, 5, 'no new connection while the circuit is open');
    } finally {
      await t.close();
      await silent.close();
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
