// Contract §13 through the HTTP API, on every store: the search, asking to join, withdrawing and
// leaving, the administrators' members list, approve/refuse/promote/demote/remove and the texts'
// editor; every transition allowed and every one refused with its status and body, the same request
// twice, CSRF on every write, a disabled user, a directory-synced group, the audit lines, and the
// concurrency of two administrators and of a hundred people asking at once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { disableUser } from '../../src/auth/users.ts';
import { applyImport } from '../../src/groups/import.ts';
import type { Stores } from '../../src/store/types.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { pgPool, sqliteDb } from '../helpers/engines.ts';
import { describeEachStore } from '../helpers/stores.ts';

const NOT_AUTHENTICATED = { detail: 'Authentication credentials were not provided.' };
const PERMISSION_DENIED = { detail: 'You do not have permission to perform this action.' };
const NOT_FOUND = { detail: 'Not found.' };
const LAST_ADMINISTRATOR = { detail: 'A group needs an administrator: make someone else one first.' };
const DIRECTORY_MANAGED = { detail: "This group's members are managed by the directory." };
const NOT_A_TRANSITION = { detail: 'Only a member can be made an administrator: approve the request first.' };
const CSRF_ORIGIN = { detail: 'CSRF Failed: Origin checking failed.' };
const CSRF_TOKEN = { detail: 'CSRF Failed: CSRF token incorrect.' };
const ISO_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const group = (id: number, name: string, extra: Partial<Record<string, unknown>> = {}) => ({
  id,
  name,
  description: '',
  short_description: '',
  activities: '',
  type: 0,
  ...extra,
});

// Each test works on groups of its own, so the tests need no reset between them.
const GROUPS = [
  group(1, 'Chess Club', { description: 'Casual games of chess.', short_description: 'Know the moves.' }),
  group(2, 'Café Crème', { description: 'Coffee tasting.', short_description: 'Bring a cup.', type: 1 }),
  group(3, 'Straße Runners', { description: 'Running in the STREETS.', short_description: '' }),
  group(4, 'Approvals'),
  group(5, 'Last Admin'),
  group(6, 'Directory Group'),
  group(7, 'Texts'),
  group(8, 'CSRF'),
  group(9, 'Two Admins'),
  group(10, 'Crowd'),
  group(11, 'Disabled'),
  group(12, 'Other'),
];

const FIXTURE = {
  groups: GROUPS,
  users: [{ username: 'never', active: true }],
  memberships: [
    { group: 4, username: 'alice', status: 2 },
    { group: 4, username: 'bob', status: 1 },
    { group: 5, username: 'alice', status: 2 },
    { group: 5, username: 'bob', status: 1 },
    { group: 6, username: 'alice', status: 2 },
    { group: 6, username: 'bob', status: 1 },
    { group: 7, username: 'alice', status: 2 },
    { group: 7, username: 'bob', status: 1 },
    { group: 8, username: 'alice', status: 2 },
    { group: 8, username: 'bob', status: 0 },
    { group: 9, username: 'alice', status: 2 },
    { group: 9, username: 'bob', status: 2 },
    { group: 10, username: 'alice', status: 2 },
    { group: 11, username: 'alice', status: 2 },
    { group: 12, username: 'carol', status: 1 },
  ],
};

const PASSWORDS: Record<string, string> = { alice: 'pw', bob: 'pw', carol: 'pw', dave: 'pw', erin: 'pw' };
for (let i = 0; i < 100; i++) PASSWORDS[`joiner${String(i).padStart(3, '0')}`] = 'pw';

/** A statement on the database behind the service, as an operator's SQL shell would run it. */
async function sql(stores: Stores, text: string, params: (string | number)[] = []): Promise<void> {
  if (stores.engine.database === 'sqlite') {
    sqliteDb(stores)
      .prepare(text.replace(/\$(\d+)/g, '?$1'))
      .run(...params);
  } else await pgPool(stores).query(text, params);
}

describeEachStore('joining and running a group (contract §13)', (store) => {
  let t: TestApp;
  const cookies = new Map<string, string>();
  before(async () => {
    t = await startTestApp({ store, authenticator: fakeAuthenticator(PASSWORDS) });
    for (const username of ['alice', 'bob', 'carol', 'dave', 'erin']) {
      const { response, cookie } = await loginAs(t.fastify, username, 'pw');
      assert.equal(response.statusCode, 200);
      cookies.set(username, cookie);
    }
    const imported = await applyImport(t.stores, FIXTURE, t.config.usernameCase);
    assert.equal(imported.ok, true);
  });
  after(() => t.close());

  const as = (username: string) => {
    const cookie = cookies.get(username);
    assert.ok(cookie, username);
    return cookie;
  };
  async function call(
    username: string | null,
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'HEAD',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> {
    return t.fastify.inject({
      method,
      url,
      headers: {
        ...(username === null ? {} : { cookie: as(username) }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  }
  function expect(response: LightMyRequestResponse, status: number, body?: unknown, what = '') {
    assert.equal(response.statusCode, status, `${what}: ${response.body}`);
    if (body === undefined) assert.equal(response.body, '', what);
    else assert.deepEqual(response.json(), body, what);
    assert.equal(response.headers['cache-control'], 'no-store', what);
    assert.equal(response.headers['x-frame-options'], 'SAMEORIGIN', what);
  }
  const statusIn = async (username: string, id: number) =>
    (await call(username, 'GET', `/api/group/${id}`)).json().member_status;
  const myGroupIds = async (username: string) =>
    (await call(username, 'GET', '/api/group/')).json().map((g: { id: number }) => g.id);

  test('every endpoint answers its Allow, OPTIONS and 405, before any session', async () => {
    const endpoints: [string, string, string][] = [
      ['/api/groups', 'GET, HEAD, OPTIONS', 'Group Search'],
      ['/api/group/4/membership', 'POST, DELETE, OPTIONS', 'Membership'],
      ['/api/group/4/members', 'GET, HEAD, OPTIONS', 'Group Members'],
      ['/api/group/4/members/bob', 'PUT, DELETE, OPTIONS', 'Group Member'],
      ['/api/group/4/texts', 'PATCH, OPTIONS', 'Group Texts'],
    ];
    for (const [url, allow, name] of endpoints) {
      const options = await call(null, 'OPTIONS', url);
      assert.equal(options.statusCode, 200, url);
      assert.equal(options.headers['allow'], allow, url);
      assert.deepEqual(options.json(), { name, methods: allow.split(', ') }, url);
      const refused = allow.includes('GET') ? 'PATCH' : 'GET';
      const wrong = await t.fastify.inject({ method: refused as 'GET', url });
      assert.equal(wrong.statusCode, 405, url);
      assert.deepEqual(wrong.json(), { detail: `Method "${refused}" not allowed.` }, url);
      assert.equal(wrong.headers['allow'], allow, url);
      // Without a session: 403, with Allow, and a trailing slash is the same endpoint.
      const method = allow.split(', ')[0] as 'GET';
      for (const path of [url, `${url}/`]) {
        const nobody = await call(null, method, path, method === 'GET' ? undefined : {});
        expect(nobody, 403, NOT_AUTHENTICATED, path);
        assert.equal(nobody.headers['allow'], allow, path);
      }
    }
    // The seed's endpoints keep theirs exactly.
    assert.equal((await call('alice', 'GET', '/api/group/4')).headers['allow'], 'GET, HEAD, OPTIONS');
    assert.equal((await call('alice', 'GET', '/api/group/')).headers['allow'], 'GET, HEAD, OPTIONS');
    const patchDetail = await call('alice', 'PATCH', '/api/group/7', { description: 'x' });
    assert.equal(patchDetail.statusCode, 405);
  });

  test('the search finds every group by name and descriptions, case- and accent-insensitively', async () => {
    const search = async (query: string) => {
      const response = await call('carol', 'GET', `/api/groups${query}`);
      assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
      return response.json();
    };
    const all = await search('');
    assert.equal(all.count, GROUPS.length);
    assert.equal(all.next, null);
    assert.equal(all.previous, null);
    // By name (folded): Approvals, Café Crème, Chess Club, CSRF, …
    assert.deepEqual(
      all.results.map((g: { name: string }) => g.name),
      [...GROUPS.map((g) => g.name)].sort((a, b) =>
        a.normalize('NFKD').toLowerCase() < b.normalize('NFKD').toLowerCase() ? -1 : 1,
      ),
    );
    assert.deepEqual(
      all.results.find((g: { id: number }) => g.id === 12),
      { id: 12, name: 'Other', short_description: '', type: 0, member_status: 1 },
    );
    assert.deepEqual(
      (await search('?q=cafe%20CREME')).results.map((g: { id: number }) => g.id),
      [2],
    );
    assert.deepEqual(
      (await search('?q=CAFÉ')).results.map((g: { id: number }) => g.id),
      [2],
    );
    // ß folds to ss; the match is over the descriptions too.
    assert.deepEqual(
      (await search('?q=strasse')).results.map((g: { id: number }) => g.id),
      [3],
    );
    assert.deepEqual(
      (await search('?q=streets')).results.map((g: { id: number }) => g.id),
      [3],
    );
    assert.deepEqual(
      (await search('?q=bring%20a%20CUP')).results.map((g: { id: number }) => g.id),
      [2],
    );
    assert.deepEqual((await search('?q=chess&type=1')).results, []);
    assert.deepEqual(
      (await search('?q=c&type=1')).results.map((g: { id: number }) => g.id),
      [2],
    );
    // LIKE's wildcards are literal.
    assert.equal((await search('?q=%25')).count, 0);
    assert.equal((await search('?q=_')).count, 0);
    assert.deepEqual(await search('?q=nothing%20like%20this'), {
      count: 0,
      next: null,
      previous: null,
      results: [],
    });
  });

  test('the search pages by 50 with DRF links, and refuses bad parameters', async () => {
    const rows = Array.from({ length: 120 }, (_, i) =>
      group(1000 + i, `Page group ${String(i).padStart(3, '0')}`),
    );
    const imported = await applyImport(t.stores, { groups: rows }, t.config.usernameCase);
    assert.equal(imported.ok, true);
    const first = await call('carol', 'GET', '/api/groups?type=0&q=page+group');
    assert.equal(first.statusCode, 200, first.body);
    const page1 = first.json();
    assert.equal(page1.count, 120);
    assert.equal(page1.results.length, 50);
    assert.equal(page1.results[0].name, 'Page group 000');
    assert.equal(page1.previous, null);
    assert.equal(page1.next, 'http://localhost:80/api/groups?page=2&q=page+group&type=0');
    const page3 = (await call('carol', 'GET', '/api/groups?q=page+group&type=0&page=3')).json();
    assert.equal(page3.results.length, 20);
    assert.equal(page3.results[19].name, 'Page group 119');
    assert.equal(page3.next, null);
    assert.equal(page3.previous, 'http://localhost:80/api/groups?page=2&q=page+group&type=0');
    const page2 = (await call('carol', 'GET', '/api/groups?q=page+group&type=0&page=2')).json();
    assert.equal(page2.previous, 'http://localhost:80/api/groups?q=page+group&type=0');
    for (const page of ['4', '0', 'abc', '-1', '1.5', '99999999999']) {
      expect(
        await call('carol', 'GET', `/api/groups?q=page+group&page=${page}`),
        404,
        { detail: 'Invalid page.' },
        page,
      );
    }
    expect(await call('carol', 'GET', '/api/groups?type=3'), 400, {
      type: ['Select a valid choice. 3 is not one of the available choices.'],
    });
    expect(await call('carol', 'GET', `/api/groups?q=${'x'.repeat(201)}`), 400, {
      q: ['Ensure this field has no more than 200 characters.'],
    });
    expect(await call('carol', 'GET', '/api/groups?q=%00'), 400, { q: ['Enter a valid value.'] });
    await sql(t.stores, 'DELETE FROM groups WHERE id >= 1000');
  });

  test('asking to join: 201 pending, then 200 with the status as it is; withdrawing: 204, twice', async () => {
    expect(await call('dave', 'POST', '/api/group/4/membership'), 201, { member_status: 0 });
    expect(await call('dave', 'POST', '/api/group/4/membership'), 200, { member_status: 0 }, 'again');
    assert.equal(await statusIn('dave', 4), 0);
    assert.deepEqual(await myGroupIds('dave'), [], 'a request is not a membership');
    const found = (await call('dave', 'GET', '/api/groups?q=approvals')).json();
    assert.equal(found.results[0].member_status, 0);
    expect(await call('bob', 'POST', '/api/group/4/membership'), 200, { member_status: 1 }, 'a member');
    expect(
      await call('alice', 'POST', '/api/group/4/membership'),
      200,
      { member_status: 2 },
      'an administrator',
    );
    expect(await call('dave', 'DELETE', '/api/group/4/membership'), 204, undefined, 'withdraw');
    expect(await call('dave', 'DELETE', '/api/group/4/membership'), 204, undefined, 'withdraw again');
    assert.equal(await statusIn('dave', 4), -1);
    for (const url of ['/api/group/999/membership', '/api/group/2147483648/membership']) {
      expect(await call('dave', 'POST', url), 404, NOT_FOUND, url);
      expect(await call('dave', 'DELETE', url), 404, NOT_FOUND, url);
    }
    expect(await call('dave', 'POST', '/api/group/abc/membership'), 404, NOT_FOUND);
  });

  test('administrators list, approve, promote, demote, refuse and remove; nobody else may', async () => {
    expect(await call('erin', 'POST', '/api/group/4/membership'), 201, { member_status: 0 });
    expect(await call('dave', 'POST', '/api/group/4/membership'), 201, { member_status: 0 });
    const listed = await call('alice', 'GET', '/api/group/4/members');
    assert.equal(listed.statusCode, 200);
    const rows = listed.json();
    assert.deepEqual(
      rows.map((r: { username: string; member_status: number }) => [r.username, r.member_status]),
      [
        ['dave', 0],
        ['erin', 0],
        ['alice', 2],
        ['bob', 1],
      ],
      'requests first, then by username',
    );
    for (const row of rows) assert.match(row.since, ISO_SECONDS);
    assert.deepEqual(
      (await call('alice', 'GET', '/api/group/4/members?status=1'))
        .json()
        .map((r: { username: string }) => r.username),
      ['bob'],
    );
    expect(await call('alice', 'GET', '/api/group/4/members?status=7'), 400, {
      status: ['Select a valid choice. 7 is not one of the available choices.'],
    });
    // A member, a requester and a stranger may not list, nor decide.
    for (const who of ['bob', 'dave', 'carol']) {
      expect(await call(who, 'GET', '/api/group/4/members'), 403, PERMISSION_DENIED, who);
      expect(
        await call(who, 'PUT', '/api/group/4/members/erin', { member_status: 1 }),
        403,
        PERMISSION_DENIED,
        who,
      );
      expect(await call(who, 'DELETE', '/api/group/4/members/erin'), 403, PERMISSION_DENIED, who);
      expect(await call(who, 'DELETE', '/api/group/4/members/bob'), 403, PERMISSION_DENIED, who);
    }
    expect(await call('alice', 'GET', '/api/group/999/members'), 404, NOT_FOUND);
    expect(await call('alice', 'PUT', '/api/group/999/members/erin', { member_status: 1 }), 404, NOT_FOUND);

    // Approve: 0 → 1, and the same request again answers the same.
    const approved = await call('alice', 'PUT', '/api/group/4/members/erin', { member_status: 1 });
    assert.equal(approved.statusCode, 200, approved.body);
    assert.equal(approved.json().username, 'erin');
    assert.equal(approved.json().member_status, 1);
    assert.match(approved.json().since, ISO_SECONDS);
    assert.deepEqual(await myGroupIds('erin'), [4], 'the very next request sees the approval');
    assert.equal(await statusIn('erin', 4), 1);
    const again = await call('alice', 'PUT', '/api/group/4/members/erin', { member_status: 1 });
    assert.deepEqual(again.json(), approved.json(), 'approving twice');
    // A request is not made an administrator before it is approved.
    expect(
      await call('alice', 'PUT', '/api/group/4/members/dave', { member_status: 2 }),
      409,
      NOT_A_TRANSITION,
    );
    // Promote and demote (not the last administrator).
    assert.equal(
      (await call('alice', 'PUT', '/api/group/4/members/ERIN', { member_status: '2' })).json().member_status,
      2,
    );
    assert.equal(await statusIn('erin', 4), 2);
    expect(
      await call('erin', 'GET', '/api/group/4/members'),
      200,
      (await call('erin', 'GET', '/api/group/4/members')).json(),
    );
    assert.equal(
      (await call('erin', 'PUT', '/api/group/4/members/alice', { member_status: 1 })).json().member_status,
      1,
    );
    assert.equal(await statusIn('alice', 4), 1);
    expect(
      await call('alice', 'GET', '/api/group/4/members'),
      403,
      PERMISSION_DENIED,
      'alice is a member now',
    );
    // Nobody is added who did not ask, never signed in, or is another group's member.
    for (const username of ['carol', 'never', 'nobody-at-all', 'bad name', '%00']) {
      expect(
        await call('erin', 'PUT', `/api/group/4/members/${username}`, { member_status: 1 }),
        404,
        NOT_FOUND,
        username,
      );
    }
    expect(await call('erin', 'DELETE', '/api/group/4/members/nobody-at-all'), 404, NOT_FOUND);
    expect(
      await call('erin', 'DELETE', '/api/group/4/members/carol'),
      204,
      undefined,
      'not a member here: nothing to do',
    );
    // Refuse a request; remove a member; both twice.
    expect(await call('erin', 'DELETE', '/api/group/4/members/dave'), 204);
    expect(await call('erin', 'DELETE', '/api/group/4/members/dave'), 204, undefined, 'again');
    assert.equal(await statusIn('dave', 4), -1);
    expect(await call('erin', 'DELETE', '/api/group/4/members/bob'), 204);
    assert.equal(await statusIn('bob', 4), -1);
    assert.equal((await myGroupIds('bob')).includes(4), false);
    // The audit lines: actor, group, username, from, to.
    const audit = t.logs
      .filter((line) => line.includes('"audit":"membership"'))
      .map((line) => JSON.parse(line));
    const pick = ({ actor, group: g, username, from, to }: Record<string, unknown>) => ({
      actor,
      group: g,
      username,
      from,
      to,
    });
    assert.deepEqual(
      audit
        .filter((a) => a.group === 4)
        .map(pick)
        .slice(-4),
      [
        { actor: 'alice', group: 4, username: 'erin', from: 1, to: 2 },
        { actor: 'erin', group: 4, username: 'alice', from: 2, to: 1 },
        { actor: 'erin', group: 4, username: 'dave', from: 0, to: -1 },
        { actor: 'erin', group: 4, username: 'bob', from: 1, to: -1 },
      ],
    );
  });

  test('bad bodies are 400s naming the fields', async () => {
    const put = (body: unknown) => call('alice', 'PUT', '/api/group/5/members/bob', body);
    expect(await put({}), 400, { member_status: ['This field is required.'] });
    expect(await put({ member_status: 0 }), 400, { member_status: ['"0" is not a valid choice.'] });
    expect(await put({ member_status: 3 }), 400, { member_status: ['"3" is not a valid choice.'] });
    expect(await put({ member_status: 'x' }), 400, { member_status: ['"x" is not a valid choice.'] });
    expect(await put({ member_status: 1, role: 'x' }), 400, { role: ['This field cannot be changed here.'] });
    expect(await put([1]), 400, { detail: 'Invalid data. Expected a dictionary.' });
    const form = await t.fastify.inject({
      method: 'PUT',
      url: '/api/group/5/members/bob',
      headers: { cookie: as('alice'), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'member_status=1',
    });
    assert.equal(form.statusCode, 200, form.body);
    const text = await t.fastify.inject({
      method: 'PUT',
      url: '/api/group/5/members/bob',
      headers: { cookie: as('alice'), 'content-type': 'text/plain' },
      payload: 'member_status=1',
    });
    assert.equal(text.statusCode, 415);
  });

  test('the last administrator cannot leave, demote or remove themselves', async () => {
    expect(await call('alice', 'DELETE', '/api/group/5/membership'), 409, LAST_ADMINISTRATOR, 'leave');
    expect(
      await call('alice', 'PUT', '/api/group/5/members/alice', { member_status: 1 }),
      409,
      LAST_ADMINISTRATOR,
      'demote',
    );
    expect(await call('alice', 'DELETE', '/api/group/5/members/alice'), 409, LAST_ADMINISTRATOR, 'remove');
    assert.equal(await statusIn('alice', 5), 2);
    // With a second administrator, the first may go.
    assert.equal(
      (await call('alice', 'PUT', '/api/group/5/members/bob', { member_status: 2 })).statusCode,
      200,
    );
    expect(await call('alice', 'DELETE', '/api/group/5/membership'), 204);
    assert.equal(await statusIn('alice', 5), -1);
    expect(
      await call('bob', 'DELETE', '/api/group/5/membership'),
      409,
      LAST_ADMINISTRATOR,
      'now bob is the last',
    );
    // A member leaves freely.
    expect(await call('carol', 'DELETE', '/api/group/12/membership'), 204);
    assert.deepEqual(await myGroupIds('carol'), []);
  });

  test('a directory-synced group: its members follow the directory (409), requests are clubhouse’s', async () => {
    await sql(t.stores, "UPDATE groups SET external_id = 'entry-uuid-6' WHERE id = 6");
    expect(await call('dave', 'POST', '/api/group/6/membership'), 201, { member_status: 0 });
    expect(await call('erin', 'POST', '/api/group/6/membership'), 201, { member_status: 0 });
    const listed = (await call('alice', 'GET', '/api/group/6/members')).json();
    assert.deepEqual(
      listed.map((r: { username: string }) => r.username),
      ['dave', 'erin', 'alice', 'bob'],
    );
    expect(
      await call('alice', 'PUT', '/api/group/6/members/dave', { member_status: 1 }),
      409,
      DIRECTORY_MANAGED,
    );
    expect(
      await call('alice', 'PUT', '/api/group/6/members/bob', { member_status: 2 }),
      409,
      DIRECTORY_MANAGED,
    );
    expect(await call('alice', 'DELETE', '/api/group/6/members/bob'), 409, DIRECTORY_MANAGED);
    expect(
      await call('bob', 'DELETE', '/api/group/6/membership'),
      409,
      DIRECTORY_MANAGED,
      'leaving is the directory’s',
    );
    expect(await call('alice', 'DELETE', '/api/group/6/members/erin'), 204, undefined, 'refusing a request');
    expect(await call('dave', 'DELETE', '/api/group/6/membership'), 204, undefined, 'withdrawing');
    expect(await call('alice', 'PATCH', '/api/group/6/texts', { activities: 'x' }), 400, {
      activities: ['This field is managed by the directory.'],
    });
    assert.equal(await statusIn('bob', 6), 1);
  });

  test('administrators edit the texts; anything else is named, and nobody else may', async () => {
    const patched = await call('alice', 'PATCH', '/api/group/7/texts', {
      description: 'Ünïcødé 🎲 and a new description',
      activities: 'Mondays.',
    });
    expect(patched, 200, {
      id: 7,
      name: 'Texts',
      description: 'Ünïcødé 🎲 and a new description',
      short_description: '',
      activities: 'Mondays.',
      type: 0,
      member_status: 2,
    });
    // The very next read, the detail and the search, see it.
    assert.equal(
      (await call('bob', 'GET', '/api/group/7')).json().description,
      'Ünïcødé 🎲 and a new description',
    );
    assert.deepEqual(
      (await call('bob', 'GET', '/api/groups?q=%C3%9CNIC')).json().results.map((g: { id: number }) => g.id),
      [7],
    );
    expect(await call('alice', 'PATCH', '/api/group/7/texts', {}), 200, patched.json(), 'nothing to change');
    expect(
      await call('alice', 'PATCH', '/api/group/7/texts', { name: 'New', type: 1, description: 'ok' }),
      400,
      {
        name: ['This field cannot be changed here.'],
        type: ['This field cannot be changed here.'],
      },
    );
    expect(
      await call('alice', 'PATCH', '/api/group/7/texts', {
        short_description: 'x'.repeat(501),
        activities: 3,
        description: null,
      }),
      400,
      {
        short_description: ['Ensure this field has no more than 500 characters.'],
        activities: ['Not a valid string.'],
        description: ['This field may not be null.'],
      },
    );
    expect(
      await call('alice', 'PATCH', '/api/group/7/texts', { short_description: '🎲'.repeat(500) }),
      200,
      {
        ...(patched.json() as Record<string, unknown>),
        short_description: '🎲'.repeat(500),
      },
      '500 code points',
    );
    expect(await call('alice', 'PATCH', '/api/group/7/texts', 'text'), 400, {
      detail: 'Invalid data. Expected a dictionary.',
    });
    expect(await call('bob', 'PATCH', '/api/group/7/texts', { description: 'mine' }), 403, PERMISSION_DENIED);
    expect(
      await call('bob', 'PATCH', '/api/group/7/texts', { name: 'mine' }),
      403,
      PERMISSION_DENIED,
      'before the fields',
    );
    expect(await call('alice', 'PATCH', '/api/group/999/texts', { description: 'x' }), 404, NOT_FOUND);
    assert.equal(
      (await call('bob', 'GET', '/api/group/7')).json().description,
      'Ünïcødé 🎲 and a new description',
    );
  });

  test('CSRF: every write refuses a cross-origin request or a wrong token, and changes nothing', async () => {
    const writes: [string, 'POST' | 'PUT' | 'PATCH' | 'DELETE', string, unknown][] = [
      ['dave', 'POST', '/api/group/8/membership', undefined],
      ['bob', 'DELETE', '/api/group/8/membership', undefined],
      ['alice', 'PUT', '/api/group/8/members/bob', { member_status: 1 }],
      ['alice', 'DELETE', '/api/group/8/members/bob', undefined],
      ['alice', 'PATCH', '/api/group/8/texts', { description: 'forged' }],
    ];
    for (const [who, method, url, body] of writes) {
      expect(
        await call(who, method, url, body, { origin: 'https://evil.example' }),
        403,
        CSRF_ORIGIN,
        `${method} ${url}`,
      );
      expect(
        await call(who, method, url, body, { 'sec-fetch-site': 'cross-site' }),
        403,
        CSRF_ORIGIN,
        `${method} ${url}`,
      );
      expect(
        await call(who, method, url, body, { 'x-csrftoken': 'wrong' }),
        403,
        CSRF_TOKEN,
        `${method} ${url}`,
      );
    }
    assert.equal(await statusIn('dave', 8), -1);
    assert.equal(await statusIn('bob', 8), 0);
    assert.equal((await call('alice', 'GET', '/api/group/8')).json().description, '');
    // The same requests from the page itself pass.
    const csrftoken = /csrftoken=([A-Za-z0-9]+)/.exec(as('dave'))![1]!;
    expect(
      await call('dave', 'POST', '/api/group/8/membership', undefined, {
        origin: 'http://localhost:80',
        host: 'localhost:80',
        'sec-fetch-site': 'same-origin',
        'x-csrftoken': csrftoken,
      }),
      201,
      { member_status: 0 },
    );
  });

  test("a disabled user's requests are refused, and their requests stay for the administrators", async () => {
    const { cookie } = await loginAs(t.fastify, 'erin', 'pw');
    cookies.set('erin', cookie);
    expect(await call('erin', 'POST', '/api/group/11/membership'), 201, { member_status: 0 });
    await disableUser(t.stores, 'erin');
    expect(await call('erin', 'POST', '/api/group/11/membership'), 403, NOT_AUTHENTICATED);
    expect(await call('erin', 'DELETE', '/api/group/11/membership'), 403, NOT_AUTHENTICATED);
    expect(await call('erin', 'GET', '/api/groups'), 403, NOT_AUTHENTICATED);
    expect(await call('erin', 'PATCH', '/api/group/11/texts', { description: 'x' }), 403, NOT_AUTHENTICATED);
    const listed = (await call('alice', 'GET', '/api/group/11/members?status=0')).json();
    assert.deepEqual(
      listed.map((r: { username: string }) => r.username),
      ['erin'],
    );
    expect(await call('alice', 'DELETE', '/api/group/11/members/erin'), 204);
  });

  test('two administrators demoting each other at once leave exactly one administrator', async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = await Promise.all([
        call('alice', 'PUT', '/api/group/9/members/bob', { member_status: 1 }),
        call('bob', 'PUT', '/api/group/9/members/alice', { member_status: 1 }),
      ]);
      const statuses = [a.statusCode, b.statusCode].sort();
      // One wins; the other is no longer an administrator (403) or would be the last one (409).
      assert.equal(statuses[0], 200, `${a.body} ${b.body}`);
      assert.ok(statuses[1] === 403 || statuses[1] === 409, `${a.body} ${b.body}`);
      const admins = (await Promise.all([statusIn('alice', 9), statusIn('bob', 9)])).filter((s) => s === 2);
      assert.equal(admins.length, 1, `round ${round}`);
      // Both leaving at once: exactly one may.
      const winner = (await statusIn('alice', 9)) === 2 ? 'alice' : 'bob';
      const loser = winner === 'alice' ? 'bob' : 'alice';
      assert.equal(
        (await call(winner, 'PUT', `/api/group/9/members/${loser}`, { member_status: 2 })).statusCode,
        200,
      );
      const left = await Promise.all([
        call('alice', 'DELETE', '/api/group/9/membership'),
        call('bob', 'DELETE', '/api/group/9/membership'),
      ]);
      assert.deepEqual(left.map((r) => r.statusCode).sort(), [204, 409]);
      const stayed = (await statusIn('alice', 9)) === 2 ? 'alice' : 'bob';
      const gone = stayed === 'alice' ? 'bob' : 'alice';
      assert.equal(await statusIn(gone, 9), -1);
      // Back to two administrators for the next round.
      expect(await call(gone, 'POST', '/api/group/9/membership'), 201, { member_status: 0 });
      assert.equal(
        (await call(stayed, 'PUT', `/api/group/9/members/${gone}`, { member_status: 1 })).statusCode,
        200,
      );
      assert.equal(
        (await call(stayed, 'PUT', `/api/group/9/members/${gone}`, { member_status: 2 })).statusCode,
        200,
      );
    }
  });

  test('a hundred people asking to join at once all end pending, once each', async () => {
    const joiners = Array.from({ length: 100 }, (_, i) => `joiner${String(i).padStart(3, '0')}`);
    for (const username of joiners) {
      const { cookie } = await loginAs(t.fastify, username, 'pw');
      cookies.set(username, cookie);
    }
    // All at once; then all at once again, each answered with the request it already has. A
    // machine loaded by other suites may run out of database connections for a moment: the
    // service then answers 503 with Retry-After having written nothing (contract §2), and the
    // client asks again; what is proven is that no request is lost or made twice.
    const ask = async () => {
      const first = await Promise.all(
        joiners.map((username) => call(username, 'POST', '/api/group/10/membership')),
      );
      const answers: LightMyRequestResponse[] = [];
      for (const [i, answer] of first.entries()) {
        let last = answer;
        while (last.statusCode === 503) {
          assert.equal(last.headers['retry-after'], '5');
          last = await call(joiners[i]!, 'POST', '/api/group/10/membership');
        }
        answers.push(last);
      }
      return { answers, atOnce: first.filter((r) => r.statusCode !== 503).length };
    };
    const once = await ask();
    const twice = await ask();
    assert.ok(once.atOnce > 0 && twice.atOnce > 0);
    // A retried ask whose first try had in fact been written would answer 200: none did.
    assert.deepEqual(
      once.answers.map((r) => r.statusCode),
      joiners.map(() => 201),
    );
    assert.deepEqual(
      twice.answers.map((r) => r.statusCode),
      joiners.map(() => 200),
    );
    for (const answer of [...once.answers, ...twice.answers])
      assert.deepEqual(answer.json(), { member_status: 0 });
    const listed = (await call('alice', 'GET', '/api/group/10/members?status=0')).json();
    assert.deepEqual(
      listed.map((r: { username: string }) => r.username),
      joiners,
    );
    assert.equal((await call('alice', 'GET', '/api/group/10/members')).json().length, 101);
    // One person asking twice at once is one request.
    const same = await Promise.all([0, 1].map(() => call('carol', 'POST', '/api/group/10/membership')));
    assert.deepEqual(same.map((r) => r.statusCode).sort(), [200, 201]);
    assert.equal((await call('alice', 'GET', '/api/group/10/members')).json().length, 102);
  });
});
