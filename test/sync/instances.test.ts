// Contract §11 across instances, on every database store: two services with GROUP_SYNC_INTERVAL on
// one database run one sync at a time (the store's lease; the CLI contends for it too), and after a
// sync commits the very next request on any instance answers the new groups and memberships.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Attribute, Change } from 'ldapts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { fakeAuthenticator, lineSink, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { DIRECTORY_USERS, type Slapd, startSlapd, userDn } from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import { asAdministrator, CLUBS_DN, runSync, syncDirectoryLdif, syncEnv } from '../helpers/sync-directory.ts';

describeEachStore('the group sync across instances', (store) => {
  let slapd: Slapd;
  let made: StoreData;

  before(async () => {
    slapd = await startSlapd(DIRECTORY_USERS, { tls: false, ldif: syncDirectoryLdif() });
    made = await store.create();
  });
  after(async () => {
    await made?.drop();
    await slapd?.stop();
  });

  test('two instances with GROUP_SYNC_INTERVAL run one sync at a time, and the CLI is refused while one runs', async () => {
    // Every chunk from the directory is late: a run lasts long enough for the others to meet it.
    const slow: FaultProxy = await startFaultProxy(slapd.plainPort);
    slow.setFault({ kind: 'delay', ms: 60 });
    const logs: Record<string, unknown>[][] = [[], []];
    const servers: RunningServer[] = [];
    try {
      for (const lines of logs) {
        const config = loadConfig({
          ...made.env,
          ...syncEnv(slapd, slow.port),
          PORT: '0',
          IMAP_HOST: '127.0.0.1',
          IMAP_SECURITY: 'plain',
          GROUP_SYNC_INTERVAL: '1h',
        });
        const sink = lineSink(lines, (line) => JSON.parse(line) as Record<string, unknown>);
        servers.push(await startServer(config, createLogger('info', sink)));
      }
      // Both start their first run at once: one takes the lease, the other is told so at once.
      const outcomes = () =>
        logs.flat().filter((line) => /^group sync (done|not run|failed)/.test(String(line['msg'])));
      for (let waited = 0; outcomes().length < 1 && waited < 30_000; waited += 20) await sleep(20);
      // While that run holds the lease, the CLI is refused too.
      const cli = await runSync({ ...made.env, ...syncEnv(slapd) });
      assert.equal(cli.code, 1, cli.out.join('\n'));
      assert.match(cli.err.join('\n'), /another group sync is running \(.+, for \d+ s more at most\)/);
      for (let waited = 0; outcomes().length < 2 && waited < 30_000; waited += 100) await sleep(100);
      const messages = outcomes()
        .map((line) => String(line['msg']).replace(/:.*/, ''))
        .sort();
      assert.deepEqual(messages, ['group sync done', 'group sync not run']);
      const busy = outcomes().find((line) => String(line['msg']).startsWith('group sync not run'));
      assert.match(String(busy?.['msg']), /another group sync is running/);
    } finally {
      for (const server of servers) await server.close();
      await slow.close();
    }
  });

  test('after a sync commits, the very next request on either instance answers the new memberships', async () => {
    const apps: TestApp[] = [];
    try {
      for (let i = 0; i < 2; i++)
        apps.push(
          await startTestApp({ store, env: made.env, authenticator: fakeAuthenticator({ alice: 'pw' }) }),
        );
      const names = async (app: TestApp, cookie: string) => {
        const response = await app.fastify.inject({ method: 'GET', url: '/api/group/', headers: { cookie } });
        assert.equal(response.statusCode, 200);
        return (response.json() as { name: string }[]).map((g) => g.name).sort();
      };
      const cookies = [];
      for (const app of apps) cookies.push((await loginAs(app.fastify, 'alice', 'pw')).cookie);
      // Answers kept in memory on both (the SQLite group cache) before the directory changes.
      for (const [i, app] of apps.entries()) assert.ok(!(await names(app, cookies[i]!)).includes('Theatre'));
      await asAdministrator(slapd, async (client) => {
        await client.modifyDN(`cn=Drama,ou=groups,dc=example,dc=org`, `cn=Theatre,${CLUBS_DN}`);
        await client.modify(`cn=Theatre,${CLUBS_DN}`, [
          new Change({
            operation: 'add',
            modification: new Attribute({ type: 'member', values: [userDn({ username: 'alice' })] }),
          }),
        ]);
      });
      const run = await runSync({ ...made.env, ...syncEnv(slapd) });
      assert.equal(run.code, 0, run.err.join('\n'));
      for (const [i, app] of apps.entries())
        assert.ok((await names(app, cookies[i]!)).includes('Theatre'), `instance ${i + 1}`);
    } finally {
      for (const app of apps) await app.close();
    }
  });
});
