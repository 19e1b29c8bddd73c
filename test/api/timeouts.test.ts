// Server timeouts set deliberately (slowloris): headers must arrive within HEADERS_TIMEOUT_MS, a
// whole request within REQUEST_TIMEOUT_MS, and an idle keep-alive connection is closed after
// KEEP_ALIVE_TIMEOUT_MS. Meanwhile other clients are served.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { fakeAuthenticator, startTestApp, type TestApp } from '../helpers/app.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';

/** Collects what the server sends until it closes the connection (or `limitMs` passes). */
function untilClosed(socket: Socket, limitMs: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closed: false });
    }, limitMs);
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true });
    });
  });
}

describe('server timeouts against slow clients', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({}),
      env: { HEADERS_TIMEOUT_MS: '600', REQUEST_TIMEOUT_MS: '1500', KEEP_ALIVE_TIMEOUT_MS: '700' },
    });
    port = Number(new URL(await t.fastify.listen({ port: 0, host: '127.0.0.1' })).port);
  });
  after(() => t.close());

  test('headers that never finish: 408 and the connection closed', async () => {
    // Not before the headers timeout: a shorter timer started before the connection has fired by
    // the close (timers run in order of expiry; a close that came early comes first).
    const reference = referenceTimer(500);
    const socket = connect(port, '127.0.0.1');
    socket.write('GET /api/auth/check HTTP/1.1\r\nhost: x\r\nx-slow: ');
    const fast = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(fast.status, 200, 'other clients are served meanwhile');
    const result = await untilClosed(socket, 15_000);
    reference.cancel();
    assert.ok(result.closed, 'the server closed the connection');
    assert.match(result.text, /^HTTP\/1\.1 408 /);
    assert.match(result.text, /x-frame-options: SAMEORIGIN/i);
    assert.ok(reference.fired, 'closed before the headers timeout');
  });

  test('a body that never finishes: 408 and the connection closed', async () => {
    const reference = referenceTimer(1000);
    const socket = connect(port, '127.0.0.1');
    socket.write(
      'POST /api/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"user',
    );
    const result = await untilClosed(socket, 15_000);
    reference.cancel();
    assert.ok(result.closed);
    assert.match(result.text, /^HTTP\/1\.1 408 /);
    assert.ok(reference.fired, 'closed before the request timeout');
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const socket = connect(port, '127.0.0.1');
    socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
    const result = await untilClosed(socket, 15_000);
    assert.ok(result.closed);
    assert.match(result.text, /^HTTP\/1\.1 200 /);
    assert.match(result.text, /keep-alive: timeout=0?\d/i);
  });

  test('HEADERS_TIMEOUT_MS may not exceed REQUEST_TIMEOUT_MS', async () => {
    await assert.rejects(
      startTestApp({
        authenticator: fakeAuthenticator({}),
        env: { HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' },
      }),
      /HEADERS_TIMEOUT_MS/,
    );
  });
});
