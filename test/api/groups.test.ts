// Contract §3: GET /api/group/ and GET /api/group/{id}, with fixtures imported through applyImport
// (the path `clubhouse import` takes) and users disabled through the CLI itself.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type CliIo, runCli } from '../../src/cli/main.ts';
import { applyImport } from '../../src/groups/import.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const ALLOW = 'GET, HEAD, OPTIONS';
const NOT_AUTHENTICATED = { detail: 'Authentication credentials were not provided.' };
const NOT_FOUND = { detail: 'Not found.' };
const SESSION_MS = 1_209_600_000;
const MAX_ID = 2_147_483_647;

// Strings a naive layer could mangle: astral code points, a ZWJ sequence, a combining mark, right-to-left
// text, JSON escapes, U+2028 (a line break to JavaScript source), control characters other than NUL.
const UNICODE_NAME = 'Ünïcødé 🎲 👩‍👩‍👧 e\u0301 مرحبا 漢字';
const UNICODE_TEXT = 'line 1\nline 2\t"quoted" \\ back\u2028slash \u0001 \u200b zero width';

const GROUPS = [
  {
    id: 1,
    name: 'Chess Club',
    description: 'Casual games.',
    short_description: 'Know the moves.',
    activities: 'Tuesdays.',
    type: 0,
  },
  {
    id: 3,
    name: 'Biology 2B',
    description: 'Cells.',
    short_description: 'Year 2.',
    activities: 'Labs.',
    type: 1,
  },
  { id: 7, name: 'Seven', description: 'Lucky.', short_description: '', activities: 'Dice.', type: 1 },
  {
    id: 12,
    name: 'Pending',
    description: 'Waiting room.',
    short_description: 'Ask.',
    activities: '',
    type: 0,
  },
  { id: 20, name: 'Bob only', description: 'Not alice.', short_description: '', activities: '', type: 0 },
  { id: 30, name: UNICODE_NAME, description: UNICODE_TEXT, short_description: '', activities: '', type: 0 },
  { id: MAX_ID, name: 'Largest id', description: '', short_description: '', activities: '', type: 1 },
] as const;

const byId = (id: number) => {
  const group = GROUPS.find((g) => g.id === id);
  assert.ok(group, `fixture group ${id}`);
  return group;
};

// Memberships listed out of id order, so an ordered answer proves the ORDER BY.
const FIXTURE = {
  groups: GROUPS,
  memberships: [
    { group: MAX_ID, username: 'alice', status: 2 },
    { group: 30, username: 'alice', status: 1 },
    { group: 12, username: 'alice', status: 0 },
    { group: 7, username: 'alice', status: 2 },
    { group: 1, username: 'alice', status: 1 },
    { group: 20, username: 'bob', status: 1 },
    { group: 3, username: 'bob', status: 0 },
    { group: 1, username: 'dave', status: 1 },
    { group: 1, username: 'erin', status: 1 },
  ],
};

const PASSWORDS = { alice: 'pw', bob: 'pw', carol: 'pw', dave: 'pw', erin: 'pw', frank: 'pw' };

function collectingIo(): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (text) => lines.push(text), err: (text) => errors.push(text) };
}

describeEachStore('group endpoints (contract §3)', (store) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ store, authenticator: fakeAuthenticator(PASSWORDS), fixedClock: true });
    const imported = await applyImport(t.stores, FIXTURE, t.config.usernameCase);
    assert.deepEqual(imported, { ok: true, counts: { groups: 7, users: 0, memberships: 9 } });
  });
  after(() => t.close());

  /** A fresh session (each test logs in itself: the expiry test moves the clock). */
  async function session(username: string): Promise<string> {
    const { response, cookie } = await loginAs(t.fastify, username, 'pw');
    assert.equal(response.statusCode, 200, `login ${username}`);
    return cookie;
  }

  async function get(url: string, cookie?: string) {
    return t.fastify.inject({ method: 'GET', url, headers: cookie === undefined ? {} : { cookie } });
  }

  function assertJson(response: { statusCode: number; headers: Record<string, unknown> }, status: number) {
    assert.equal(response.statusCode, status);
    assert.match(String(response.headers['content-type']), /^application\/json(; charset=utf-8)?$/);
  }

  async function assertNotAuthenticated(cookie: string | undefined, what: string) {
    for (const url of ['/api/group/', '/api/group', '/api/group/1', '/api/group/7/', '/api/group/999']) {
      const response = await get(url, cookie);
      assertJson(response, 403);
      assert.deepEqual(response.json(), NOT_AUTHENTICATED, `${what}: ${url}`);
      assert.equal(response.headers['allow'], ALLOW, `${what}: ${url}`);
    }
  }

  test('without a session both endpoints answer 403 "Authentication credentials were not provided."', async () => {
    await assertNotAuthenticated(undefined, 'no cookie');
    await assertNotAuthenticated('csrftoken=abcdefghijklmnopqrstuvwxyzABCDEF', 'only a csrftoken');
  });

  test('an invalid session cookie answers 403 on both endpoints', async () => {
    await assertNotAuthenticated('sessionid=junk', 'malformed id');
    await assertNotAuthenticated(`sessionid=${'a'.repeat(32)}`, 'well-formed unknown id');
    await assertNotAuthenticated('sessionid=', 'empty id');
    const cookie = await session('alice');
    const upper = cookie.replace(
      /sessionid=([a-z0-9]+)/,
      (_match, id: string) => `sessionid=${id.toUpperCase()}`,
    );
    assert.notEqual(upper, cookie);
    await assertNotAuthenticated(upper, 'id in the wrong case');
  });

  test('a logged-out session answers 403 on both endpoints', async () => {
    const cookie = await session('alice');
    assertJson(await get('/api/group/', cookie), 200);
    const logout = await t.fastify.inject({ method: 'POST', url: '/api/auth/logout', headers: { cookie } });
    assert.equal(logout.statusCode, 200);
    await assertNotAuthenticated(cookie, 'logged out');
  });

  test('an expired session answers 403 on both endpoints (1209600 s after login, absolute)', async () => {
    const cookie = await session('alice');
    t.clock.advance(SESSION_MS - 1);
    assertJson(await get('/api/group/', cookie), 200);
    assertJson(await get('/api/group/1', cookie), 200);
    t.clock.advance(1);
    await assertNotAuthenticated(cookie, 'expired');
  });

  test('the list holds exactly the caller groups with status 1 or 2, ordered by id, with exactly the list fields', async () => {
    const response = await get('/api/group/', await session('alice'));
    assertJson(response, 200);
    assert.equal(response.headers['allow'], ALLOW);
    const body = response.json() as Record<string, unknown>[];
    // Not 12 (status 0), not 3 or 20 (other users' groups): 1 (member), 7 and 2^31−1 (admin), 30 (member).
    assert.deepEqual(
      body.map((group) => group['id']),
      [1, 7, 30, MAX_ID],
    );
    for (const element of body) {
      assert.deepEqual(
        Object.keys(element).sort(),
        ['activities', 'description', 'id', 'name', 'short_description', 'type'],
        'no member_status in the list',
      );
    }
    assert.deepEqual(body, [byId(1), byId(7), byId(30), byId(MAX_ID)]);
  });

  test('the list is per user: bob sees only his, a user without memberships gets []', async () => {
    const bob = await get('/api/group', await session('bob'));
    assertJson(bob, 200);
    assert.deepEqual(bob.json(), [byId(20)]);
    const carol = await get('/api/group/', await session('carol'));
    assertJson(carol, 200);
    assert.equal(carol.body, '[]');
  });

  test('the list follows membership changes: status 0 leaves it, status 2 enters it', async () => {
    const cookie = await session('erin');
    assert.deepEqual((await get('/api/group/', cookie)).json(), [byId(1)]);
    const changed = await applyImport(
      t.stores,
      {
        memberships: [
          { group: 1, username: 'erin', status: 0 },
          { group: 3, username: 'erin', status: 2 },
        ],
      },
      t.config.usernameCase,
    );
    assert.equal(changed.ok, true);
    assert.deepEqual((await get('/api/group/', cookie)).json(), [byId(3)]);
  });

  test('the detail has exactly the detail fields and member_status 2, 1, 0 or -1', async () => {
    const cookie = await session('alice');
    const cases = [
      { id: 7, member_status: 2 },
      { id: MAX_ID, member_status: 2 },
      { id: 1, member_status: 1 },
      { id: 30, member_status: 1 },
      { id: 12, member_status: 0 },
      { id: 3, member_status: -1 },
      { id: 20, member_status: -1 },
    ];
    for (const { id, member_status } of cases) {
      const response = await get(`/api/group/${id}`, cookie);
      assertJson(response, 200);
      assert.equal(response.headers['allow'], ALLOW);
      const body = response.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), [
        'activities',
        'description',
        'id',
        'member_status',
        'name',
        'short_description',
        'type',
      ]);
      assert.deepEqual(body, { ...byId(id), member_status }, `group ${id}`);
    }
  });

  test('any logged-in user may view any group, with their own member_status', async () => {
    const bob = await session('bob');
    for (const [id, member_status] of [
      [7, -1],
      [12, -1],
      [20, 1],
      [3, 0],
    ] as const) {
      const response = await get(`/api/group/${id}`, bob);
      assertJson(response, 200);
      assert.deepEqual(response.json(), { ...byId(id), member_status }, `group ${id}`);
    }
    const carol = await get('/api/group/1', await session('carol'));
    assertJson(carol, 200);
    assert.deepEqual(carol.json(), { ...byId(1), member_status: -1 });
  });

  test('/api/group/007 is group 7 and /api/group/7/ is the same endpoint', async () => {
    const cookie = await session('alice');
    const expected = { ...byId(7), member_status: 2 };
    for (const url of [
      '/api/group/7',
      '/api/group/007',
      '/api/group/7/',
      '/api/group/0007/',
      '/api/group/7?x=1',
    ]) {
      const response = await get(url, cookie);
      assertJson(response, 200);
      assert.equal(response.headers['allow'], ALLOW, url);
      assert.deepEqual(response.json(), expected, url);
    }
    const largest = await get('/api/group/2147483647', cookie);
    assertJson(largest, 200);
    assert.deepEqual(largest.json(), { ...byId(MAX_ID), member_status: 2 });
  });

  test('any number of leading zeros is still group 7 (over 200 of them once answered 404)', async () => {
    const cookie = await session('alice');
    for (const zeros of [199, 201, 300, 10_000]) {
      const url = `/api/group/${'0'.repeat(zeros)}7`;
      const response = await get(url, cookie);
      assertJson(response, 200);
      assert.deepEqual(response.json(), { ...byId(7), member_status: 2 }, `${zeros} zeros`);
      assert.equal((await get(`${url}/`, cookie)).statusCode, 200, `${zeros} zeros and a slash`);
    }
    // Many zeros before a number out of range is still out of range.
    assert.equal((await get(`/api/group/${'0'.repeat(500)}2147483648`, cookie)).statusCode, 404);
  });

  test('ids that are not [0-9]+, out of range or unknown answer 404 "Not found."', async () => {
    const cookie = await session('alice');
    const urls = [
      '/api/group/abc',
      '/api/group/-1',
      '/api/group/0',
      '/api/group/000',
      '/api/group/2147483648',
      '/api/group/99999999999999999999',
      '/api/group/1.5',
      '/api/group/1e3',
      '/api/group/+7',
      '/api/group/%207',
      '/api/group/７',
      '/api/group/7abc',
      '/api/group/999',
      '/api/group/2147483646',
    ];
    for (const url of urls) {
      const response = await get(url, cookie);
      assertJson(response, 404);
      assert.deepEqual(response.json(), NOT_FOUND, url);
    }
  });

  test('HEAD answers the GET status and headers without a body, with and without a session', async () => {
    const cookie = await session('alice');
    const strip = (headers: Record<string, unknown>) => {
      const { date: _date, 'x-request-id': _id, ...rest } = headers;
      return rest;
    };
    for (const url of ['/api/group/', '/api/group/7', '/api/group/999']) {
      for (const headers of [{ cookie }, {}]) {
        const getResponse = await t.fastify.inject({ method: 'GET', url, headers });
        const head = await t.fastify.inject({ method: 'HEAD', url, headers });
        assert.equal(head.statusCode, getResponse.statusCode, url);
        assert.equal(head.body, '');
        assert.deepEqual(strip(head.headers), strip(getResponse.headers), url);
        assert.equal(head.headers['allow'], ALLOW);
      }
    }
  });

  test('OPTIONS answers 200 with Allow and a description, before any session check', async () => {
    const cases = [
      { url: '/api/group/', name: 'Group List' },
      { url: '/api/group', name: 'Group List' },
      { url: '/api/group/7', name: 'Group Detail' },
      { url: '/api/group/007/', name: 'Group Detail' },
    ];
    for (const { url, name } of cases) {
      const response = await t.fastify.inject({ method: 'OPTIONS', url });
      assertJson(response, 200);
      assert.equal(response.headers['allow'], ALLOW, url);
      assert.deepEqual(response.json(), { name, methods: ['GET', 'HEAD', 'OPTIONS'] }, url);
    }
  });

  test('other methods answer 405 with the DRF message and Allow, with and without a session', async () => {
    const cookie = await session('alice');
    for (const url of ['/api/group/', '/api/group', '/api/group/7', '/api/group/7/']) {
      for (const method of ['PUT', 'POST', 'DELETE', 'PATCH'] as const) {
        for (const headers of [{ cookie }, {}]) {
          const response = await t.fastify.inject({ method, url, headers });
          assertJson(response, 405);
          assert.equal(response.headers['allow'], ALLOW, `${method} ${url}`);
          assert.deepEqual(response.json(), { detail: `Method "${method}" not allowed.` });
        }
      }
    }
  });

  test('a user disabled with the CLI while logged in gets 403 on the very next group request', async () => {
    const cookie = await session('dave');
    assert.deepEqual((await get('/api/group/', cookie)).json(), [byId(1)]);
    const io = collectingIo();
    const code = await runCli(['user', 'disable', 'dave'], t.storeEnv, io);
    assert.equal(code, 0, io.errors.join('\n'));
    assert.deepEqual(io.lines, ['Disabled dave; ended 1 sessions.']);
    await assertNotAuthenticated(cookie, 'disabled');
    const again = await loginAs(t.fastify, 'dave', 'pw');
    assert.equal(again.response.statusCode, 403, 'a disabled user cannot log in again');
  });

  test('a user disabled by an import file gets 403 on the very next group request', async () => {
    const cookie = await session('frank');
    assertJson(await get('/api/group/1', cookie), 200);
    const outcome = await applyImport(
      t.stores,
      { users: [{ username: 'Frank', active: false }] },
      t.config.usernameCase,
    );
    assert.deepEqual(outcome, { ok: true, counts: { groups: 0, users: 1, memberships: 0 } });
    await assertNotAuthenticated(cookie, 'disabled by import');
  });

  test('unicode and empty strings come back exactly, in the list and the detail', async () => {
    const cookie = await session('alice');
    const detail = await get('/api/group/30', cookie);
    assertJson(detail, 200);
    const body = detail.json() as Record<string, unknown>;
    assert.equal(body['name'], UNICODE_NAME);
    assert.equal(body['description'], UNICODE_TEXT);
    assert.equal(body['short_description'], '');
    assert.equal(body['activities'], '');
    const list = (await get('/api/group/', cookie)).json() as Record<string, unknown>[];
    assert.deepEqual(
      list.find((group) => group['id'] === 30),
      byId(30),
    );
    // The body is UTF-8 JSON: the raw bytes decode to the same strings.
    assert.equal(JSON.parse(detail.rawPayload.toString('utf8'))['name'], UNICODE_NAME);
  });
});
