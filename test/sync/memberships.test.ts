// Contract §11 and §13 together, against the harness slapd, on every store: a group synced from the
// directory keeps following it. Its administrators (the directory's owners) see the requests made
// in clubhouse but cannot approve, promote or remove (409: the directory manages its members), its
// members cannot leave it in clubhouse, a request survives a sync run, and becomes a membership
// when the directory adds the person; the very next request through the API shows it. Its texts
// that no attribute fills are its administrators' to edit, and a sync run keeps them.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { Attribute, Change } from 'ldapts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { DIRECTORY_USERS, type Slapd, startSlapd, userDn } from '../helpers/slapd.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';
import { asAdministrator, CLUBS_DN, runSync, syncDirectoryLdif, syncEnv } from '../helpers/sync-directory.ts';

const DIRECTORY_MANAGED = { detail: "This group's members are managed by the directory." };

describeEachStore('a directory-synced group through the API (contract §11, §13)', (store) => {
  let slapd: Slapd;
  let made: StoreData;
  let t: TestApp;
  let env: Record<string, string>;
  let chess: number;
  const cookies = new Map<string, string>();

  before(async () => {
    slapd = await startSlapd(DIRECTORY_USERS, { tls: false, ldif: syncDirectoryLdif() });
    made = await store.create();
    env = { ...made.env, ...syncEnv(slapd) };
    const first = await runSync(env);
    assert.equal(first.code, 0, first.err.join('\n'));
    // The sync's settings: the serving process knows which texts the directory fills.
    t = await startTestApp({
      data: made,
      env: syncEnv(slapd),
      authenticator: fakeAuthenticator({ alice: 'pw', bob: 'pw', carol: 'pw', quinn: 'pw' }),
    });
    for (const username of ['alice', 'bob', 'carol', 'quinn']) {
      const { response, cookie } = await loginAs(t.fastify, username, 'pw');
      assert.equal(response.statusCode, 200);
      cookies.set(username, cookie);
    }
    const found = (await call('quinn', 'GET', '/api/groups?q=chess')).json();
    assert.equal(found.count, 1);
    chess = found.results[0].id;
  });
  after(async () => {
    await t?.close();
    await made?.drop();
    await slapd?.stop();
  });

  async function call(
    username: string,
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
  ) {
    return t.fastify.inject({
      method,
      url,
      headers: {
        cookie: cookies.get(username) ?? '',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  }
  const expect = (response: LightMyRequestResponse, status: number, body?: unknown) => {
    assert.equal(response.statusCode, status, response.body);
    if (body !== undefined) assert.deepEqual(response.json(), body);
  };
  const members = async () =>
    (await call('carol', 'GET', `/api/group/${chess}/members`))
      .json()
      .map((m: { username: string; member_status: number }) => `${m.username}:${m.member_status}`);

  test('requests are recorded and listed; members and administrators follow the directory (409)', async () => {
    expect(await call('quinn', 'POST', `/api/group/${chess}/membership`), 201, { member_status: 0 });
    assert.deepEqual(await members(), ['quinn:0', 'alice:1', 'bob:1', 'carol:2']);
    expect(
      await call('carol', 'PUT', `/api/group/${chess}/members/quinn`, { member_status: 1 }),
      409,
      DIRECTORY_MANAGED,
    );
    expect(
      await call('carol', 'PUT', `/api/group/${chess}/members/alice`, { member_status: 2 }),
      409,
      DIRECTORY_MANAGED,
    );
    expect(await call('carol', 'DELETE', `/api/group/${chess}/members/bob`), 409, DIRECTORY_MANAGED);
    expect(
      await call('carol', 'PUT', `/api/group/${chess}/members/carol`, { member_status: 1 }),
      409,
      DIRECTORY_MANAGED,
    );
    expect(await call('bob', 'DELETE', `/api/group/${chess}/membership`), 409, DIRECTORY_MANAGED);
    expect(await call('alice', 'GET', `/api/group/${chess}/members`), 403);
    assert.deepEqual(await members(), ['quinn:0', 'alice:1', 'bob:1', 'carol:2'], 'nothing changed');
  });

  test('a request survives a sync run, and becomes a membership when the directory adds the person', async () => {
    const unchanged = await runSync(env);
    assert.equal(unchanged.code, 0, unchanged.err.join('\n'));
    assert.deepEqual(await members(), ['quinn:0', 'alice:1', 'bob:1', 'carol:2'], 'the request stays');
    assert.equal((await call('quinn', 'GET', `/api/group/${chess}`)).json().member_status, 0);
    await asAdministrator(slapd, (client) =>
      client.modify(`cn=Chess Club,${CLUBS_DN}`, [
        new Change({
          operation: 'add',
          modification: new Attribute({ type: 'member', values: [userDn({ username: 'quinn' })] }),
        }),
      ]),
    );
    const added = await runSync(env);
    assert.equal(added.code, 0, added.err.join('\n'));
    // The very next request on the serving app answers the directory's decision.
    assert.equal((await call('quinn', 'GET', `/api/group/${chess}`)).json().member_status, 1);
    assert.ok(
      (await call('quinn', 'GET', '/api/group/')).json().some((g: { id: number }) => g.id === chess),
      'in my groups',
    );
    assert.deepEqual(await members(), ['alice:1', 'bob:1', 'carol:2', 'quinn:1']);
    expect(await call('quinn', 'DELETE', `/api/group/${chess}/membership`), 409, DIRECTORY_MANAGED);
  });

  test('a request refused or withdrawn in clubhouse is gone, and the next sync does not bring it back', async () => {
    expect(await call('alice', 'POST', `/api/group/${chess}/membership`), 200, { member_status: 1 });
    // A second synced group where quinn asks, then is refused by its owner (alice owns the class).
    const found = (await call('quinn', 'GET', '/api/groups?q=biologie')).json();
    const biology = found.results[0].id;
    expect(await call('quinn', 'POST', `/api/group/${biology}/membership`), 201, { member_status: 0 });
    expect(await call('alice', 'DELETE', `/api/group/${biology}/members/quinn`), 204);
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.equal((await call('quinn', 'GET', `/api/group/${biology}`)).json().member_status, -1);
  });

  test('the texts no attribute fills are edited by the administrators, and a sync keeps them', async () => {
    // syncEnv: description from `description`, short_description from `o`, activities from nothing.
    expect(
      await call('carol', 'PATCH', `/api/group/${chess}/texts`, { description: 'x', short_description: 'y' }),
      400,
      {
        description: ['This field is managed by the directory.'],
        short_description: ['This field is managed by the directory.'],
      },
    );
    const edited = await call('carol', 'PATCH', `/api/group/${chess}/texts`, {
      activities: 'Tuesdays, 18:00.',
    });
    assert.equal(edited.statusCode, 200, edited.body);
    assert.equal(edited.json().activities, 'Tuesdays, 18:00.');
    assert.equal(edited.json().description, 'Games on Tuesdays.');
    const run = await runSync(env);
    assert.equal(run.code, 0, run.err.join('\n'));
    assert.ok(!run.out.some((line) => line.startsWith('group changed')), run.out.join('\n'));
    assert.equal((await call('quinn', 'GET', `/api/group/${chess}`)).json().activities, 'Tuesdays, 18:00.');
  });
});
