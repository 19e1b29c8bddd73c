// Contract §6: SIGTERM or SIGINT, sent to the node process or to `npm start`, stops accepting
// connections, lets in-flight requests finish, closes the stores and exits 0.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dovecotEnv } from '../helpers/app.ts';
import { type Dovecot, startDovecot } from '../helpers/dovecot.ts';
import { canConnect } from '../helpers/ports.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';

const IN_FLIGHT = 50;

/** One login over a fresh connection (no keep-alive), answered with its status. */
function slowLogin(port: number, username: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ username, password: 'wrong-on-purpose' });
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/auth/login',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let started = 0;

async function start(command: 'node' | 'npm', dovecot: Dovecot, dir: string): Promise<ServiceProcess> {
  // A fresh database each time: the previous run's 50 failures would throttle this address.
  started++;
  return startService(
    {
      ...dovecotEnv(dovecot),
      DATABASE_URL: `sqlite:${join(dir, `${command}-${started}.db`)}`,
      SHUTDOWN_GRACE_MS: '60000',
      // The debug line of each request's arrival tells when all of them are in flight.
      LOG_LEVEL: 'debug',
    },
    { viaNpm: command === 'npm' },
  );
}

describe('graceful shutdown', () => {
  let dovecot: Dovecot;
  let dir: string;
  before(async () => {
    // Dovecot's real failure delay keeps 50 wrong-password logins in flight for about 2 s.
    dovecot = await startDovecot({ authFailureDelay: 2 });
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-shutdown-'));
  });
  after(async () => {
    await dovecot.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [command, signal] of [
    ['node', 'SIGTERM'],
    ['npm', 'SIGTERM'],
    ['node', 'SIGINT'],
  ] as const) {
    test(`${signal} to ${command === 'npm' ? 'npm start' : 'the node process'} during ${IN_FLIGHT} in-flight requests`, async () => {
      const server = await start(command, dovecot, dir);
      const exited = once(server.child, 'exit');
      const requests = Array.from({ length: IN_FLIGHT }, (_, i) =>
        slowLogin(server.port, `user${String(i).padStart(3, '0')}`),
      );
      // Signal only once the server has read every request: one not yet accepted from the listen
      // backlog when listening stops is refused by the kernel, and was never in flight.
      const received = () =>
        server
          .output()
          .split('\n')
          .filter((line) => line.includes('"incoming request"') && line.includes('/api/auth/login')).length;
      for (let i = 0; i < 600 && received() < IN_FLIGHT; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(received(), IN_FLIGHT, 'all requests reached the server');
      server.child.kill(signal);
      // Stopping: new connections are refused while the in-flight ones finish.
      let refused = false;
      for (let i = 0; i < 100 && !refused; i++) {
        refused = !(await canConnect(server.port, '127.0.0.1', 500));
        if (!refused) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(refused, 'new connections are refused after the signal');
      const statuses = await Promise.all(requests);
      assert.deepEqual(
        statuses,
        Array.from({ length: IN_FLIGHT }, () => 403),
        'every in-flight request got its answer',
      );
      const [code, killedBy] = await exited;
      assert.equal(killedBy, null, server.output());
      assert.equal(code, 0, server.output());
    });
  }
});
