// Durability (docs/reliability.md). `kill -9` of the server during a burst of logins and logouts; after a
// restart on the same database, every session whose login answered 200 and was not logged out still
// works, every logged-out one does not, and SQLite passes PRAGMA integrity_check.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { dovecotEnv } from '../helpers/app.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { recordSecrets } from '../helpers/secrets.ts';
import { type ServiceProcess, startService } from '../helpers/service.ts';

interface Outcome {
  cookie: string;
  loggedOut: 'yes' | 'no' | 'unknown';
}

async function login(url: string, username: string, agent: Agent): Promise<string | null> {
  const { password } = testUser(username);
  const response = await request(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
    dispatcher: agent,
  });
  await response.body.text();
  const lines = ([] as string[]).concat(response.headers['set-cookie'] ?? []);
  const id = lines.map((line) => /^sessionid=([a-z0-9]{32})/.exec(line)?.[1]).find((v) => v !== undefined);
  recordSecrets(password, id ?? '');
  return response.statusCode === 200 && id !== undefined ? `sessionid=${id}` : null;
}

async function check(url: string, cookie: string): Promise<number> {
  const response = await fetch(`${url}/api/auth/check`, { headers: { cookie } });
  await response.text();
  return response.status;
}

describe('kill -9 during a burst of logins and logouts', () => {
  let dovecot: Dovecot;
  let dir: string;
  before(async () => {
    dovecot = await startDovecot();
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-durability-'));
  });
  after(async () => {
    await dovecot.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('every answered login survives unless logged out; every answered logout stays logged out', async () => {
    const env = {
      ...dovecotEnv(dovecot),
      DATABASE_URL: `sqlite:${join(dir, 'durable.db')}`,
      THROTTLE_IP_FAILURES: '100000',
    };
    const first: ServiceProcess = await startService(env);
    const agent = new Agent({ connections: 32 });
    const outcomes: Outcome[] = [];
    let killed = false;
    const worker = async (slot: number) => {
      for (let round = 0; !killed; round++) {
        const username = `user${String((slot * 7 + round) % 100).padStart(3, '0')}`;
        let cookie: string | null;
        try {
          cookie = await login(first.url, username, agent);
        } catch {
          return; // the answer never came: unknown, not counted
        }
        if (cookie === null) continue;
        const outcome: Outcome = { cookie, loggedOut: 'no' };
        outcomes.push(outcome);
        if (round % 2 === 0) {
          outcome.loggedOut = 'unknown';
          try {
            const response = await request(`${first.url}/api/auth/logout`, {
              method: 'POST',
              headers: { cookie },
              dispatcher: agent,
            });
            await response.body.text();
            outcome.loggedOut = response.statusCode === 200 ? 'yes' : 'unknown';
          } catch {
            return;
          }
        }
      }
    };
    const workers = Array.from({ length: 16 }, (_, slot) => worker(slot));
    // Let the burst run, then kill the server without warning.
    while (outcomes.length < 150) await new Promise((resolve) => setTimeout(resolve, 20));
    killed = true;
    first.child.kill('SIGKILL');
    await Promise.all(workers);
    await agent.close().catch(() => undefined);

    const db = new DatabaseSync(join(dir, 'durable.db'));
    assert.equal(db.prepare('PRAGMA integrity_check').get()?.['integrity_check'], 'ok');
    db.close();

    const second = await startService(env);
    try {
      const live = outcomes.filter((o) => o.loggedOut === 'no');
      const dead = outcomes.filter((o) => o.loggedOut === 'yes');
      assert.ok(live.length > 20 && dead.length > 20, `${live.length} live, ${dead.length} logged out`);
      for (const o of live)
        assert.equal(await check(second.url, o.cookie), 200, 'a session whose login answered 200 survives');
      for (const o of dead)
        assert.equal(await check(second.url, o.cookie), 403, 'a logged-out session stays logged out');
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((resolve) => second.child.once('exit', resolve));
    }
  });
});
