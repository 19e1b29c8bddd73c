// The session lifecycle as a property (contract §2): random sequences of login, check, logout,
// disable, enable, revoke and time passing keep the invariants, checked against a simple model.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { disableUser, enableUser, revokeSessions } from '../../src/auth/users.ts';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { describeEachStore, type StoreData } from '../helpers/stores.ts';

const USERS = ['ann', 'ben', 'cy'] as const;
const PASSWORDS = Object.fromEntries(USERS.map((u) => [u, `${u}-pw`]));
const LIFETIME_MS = 1_209_600_000;

interface Model {
  /** Every id ever issued, with its owner and expiry; `dead` once logged out, rotated or revoked. */
  sessions: { id: string; cookie: string; username: string; expiresAt: number; dead: boolean }[];
  disabled: Set<string>;
  /** Users created by a successful login; disabling an unknown user does nothing. */
  known: Set<string>;
  now: number;
}

interface Real {
  t: TestApp;
}

const live = (m: Model, s: Model['sessions'][number]) => !s.dead && s.expiresAt > m.now;

class Login implements fc.AsyncCommand<Model, Real> {
  readonly user: string;
  readonly previous: number;
  constructor(user: string, previous: number) {
    this.user = user;
    this.previous = previous;
  }
  check = () => true;
  async run(m: Model, r: Real) {
    const prior = m.sessions.length === 0 ? undefined : m.sessions[this.previous % m.sessions.length];
    const { response, sessionid, cookie } = await loginAs(
      r.t.fastify,
      this.user,
      PASSWORDS[this.user]!,
      prior === undefined ? {} : { cookie: prior.cookie },
    );
    if (m.disabled.has(this.user)) {
      assert.equal(response.statusCode, 403, 'a disabled user cannot log in');
      return;
    }
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, JSON.stringify(this.user));
    assert.ok(!m.sessions.some((s) => s.id === sessionid), 'ids are never reused');
    if (prior !== undefined) prior.dead = true; // rotation: the id sent along is invalidated
    m.known.add(this.user);
    m.sessions.push({
      id: sessionid,
      cookie,
      username: this.user,
      expiresAt: m.now + LIFETIME_MS,
      dead: false,
    });
  }
  toString = () => `login(${this.user}, prev#${this.previous})`;
}

class Check implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real) {
    const s = m.sessions[this.index % m.sessions.length]!;
    const response = await r.t.fastify.inject({ url: '/api/auth/check', headers: { cookie: s.cookie } });
    if (live(m, s)) {
      assert.equal(response.statusCode, 200);
      assert.equal(response.body, JSON.stringify(s.username), 'check answers exactly the logged-in user');
    } else {
      assert.equal(
        response.statusCode,
        403,
        'a logged-out, rotated, revoked or expired id never works again',
      );
      assert.equal(response.body, '""');
    }
  }
  toString = () => `check(#${this.index})`;
}

class Logout implements fc.AsyncCommand<Model, Real> {
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }
  check = (m: Readonly<Model>) => m.sessions.length > 0;
  async run(m: Model, r: Real) {
    const s = m.sessions[this.index % m.sessions.length]!;
    const response = await r.t.fastify.inject({
      method: 'POST',
      url: '/api/auth/logout',
      headers: { cookie: s.cookie },
    });
    assert.equal(response.statusCode, 200);
    s.dead = true;
  }
  toString = () => `logout(#${this.index})`;
}

class Disable implements fc.AsyncCommand<Model, Real> {
  readonly user: string;
  constructor(user: string) {
    this.user = user;
  }
  check = () => true;
  async run(m: Model, r: Real) {
    const result = await disableUser(r.t.stores, this.user);
    assert.equal(result !== null, m.known.has(this.user));
    if (result === null) return;
    m.disabled.add(this.user);
    for (const s of m.sessions) if (s.username === this.user) s.dead = true;
  }
  toString = () => `disable(${this.user})`;
}

class Enable implements fc.AsyncCommand<Model, Real> {
  readonly user: string;
  constructor(user: string) {
    this.user = user;
  }
  check = () => true;
  async run(m: Model, r: Real) {
    await enableUser(r.t.stores, this.user);
    m.disabled.delete(this.user);
  }
  toString = () => `enable(${this.user})`;
}

class Revoke implements fc.AsyncCommand<Model, Real> {
  readonly user: string;
  constructor(user: string) {
    this.user = user;
  }
  check = () => true;
  async run(m: Model, r: Real) {
    await revokeSessions(r.t.stores, this.user);
    for (const s of m.sessions) if (s.username === this.user) s.dead = true;
  }
  toString = () => `revoke(${this.user})`;
}

class Pass implements fc.AsyncCommand<Model, Real> {
  readonly ms: number;
  constructor(ms: number) {
    this.ms = ms;
  }
  check = () => true;
  async run(m: Model, r: Real) {
    m.now += this.ms;
    r.t.clock.advance(this.ms);
  }
  toString = () => `wait(${this.ms} ms)`;
}

const user = fc.constantFrom(...USERS);
const commands = [
  fc.tuple(user, fc.nat()).map(([u, p]) => new Login(u, p)),
  fc.nat().map((i) => new Check(i)),
  fc.nat().map((i) => new Check(i)),
  fc.nat().map((i) => new Logout(i)),
  user.map((u) => new Disable(u)),
  user.map((u) => new Enable(u)),
  user.map((u) => new Revoke(u)),
  fc.constantFrom(1, 60_000, LIFETIME_MS / 2, LIFETIME_MS - 1, LIFETIME_MS).map((ms) => new Pass(ms)),
];

// Side by side, as most of the time goes waiting on the servers: 100 fresh apps a store, in turn on
// one database emptied after each (making a PostgreSQL database for each took ~1 s).
describeEachStore(
  'the session lifecycle (property)',
  (store) => {
    let data: StoreData;
    before(async () => {
      data = await store.create();
    });
    after(() => data?.drop());

    test('random login/check/logout/disable/enable/revoke/expire sequences keep the session invariants', async () => {
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
          const t = await startTestApp({
            data,
            authenticator: fakeAuthenticator(PASSWORDS),
            fixedClock: true,
          });
          try {
            const model: Model = { sessions: [], disabled: new Set(), known: new Set(), now: t.clock.now };
            await fc.asyncModelRun(() => ({ model, real: { t } }), cmds);
            // Finally, every id the model holds dead is dead in the store too, and every live one answers.
            for (const s of model.sessions) {
              const response = await t.fastify.inject({
                url: '/api/auth/check',
                headers: { cookie: s.cookie },
              });
              assert.equal(response.statusCode, live(model, s) ? 200 : 403);
            }
            for (const u of model.disabled) {
              assert.equal(
                await t.stores.sessions.countUser(u, t.clock.now),
                0,
                'a disabled user has no working session',
              );
            }
          } finally {
            await data.reset(t.stores);
            await t.close();
          }
        }),
        {
          numRuns: 100,
          seed: Number(process.env['FC_SEED'] ?? 20261121),
          // The failed assertion in the report itself (fast-check otherwise hangs it on the error's
          // `cause`, which `npm test`'s TAP reporter does not print), and every failing sequence met
          // while shrinking: a failure that comes and goes shrinks to whatever failed last.
          includeErrorInReport: true,
          verbose: 1,
        },
      );
    });
  },
  { concurrency: true },
);
