// Contract §8, the chain's semantics with scripted backends: order, first success wins,
// bad_credentials asks the next, an outage class is kept so nobody is locked out, domain routing,
// a username no backend serves refused without contacting any, and the refusal delay of a username
// drawn from its own route's backends (§3).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Backend, BackendFailure, VerifyResult } from '../../src/backends/authenticator.ts';
import { backendsFor, createChain, mailDomain } from '../../src/backends/chain.ts';

type Script = (username: string, password: string) => VerifyResult | Promise<VerifyResult>;

function scripted(name: string, script: Script, domains: string[] | null = null) {
  const calls: string[] = [];
  let probes = 0;
  let closed = false;
  const backend: Backend & { calls: string[]; probes: () => number; closed: () => boolean } = {
    name,
    kind: 'imap',
    domains,
    calls,
    probes: () => probes,
    closed: () => closed,
    async verify(username, password) {
      calls.push(username);
      return script(username, password);
    },
    async probe() {
      probes++;
      return name.includes('down')
        ? { ok: false, reason: 'upstream_unavailable: ECONNREFUSED' }
        : { ok: true };
    },
    refusalDelayMs: () => 777,
    maxVerifyMs: 1000,
    stats: () => ({ active: 1, queued: 2, breaker: name.includes('down') ? 'open' : 'closed' }),
    async close() {
      closed = true;
    },
  };
  return backend;
}

const refuse =
  (failure: BackendFailure): Script =>
  () => ({ ok: false, failure, reason: failure });
const accept =
  (password: string): Script =>
  (_u, p) =>
    p === password ? { ok: true } : { ok: false, failure: 'bad_credentials', reason: 'wrong' };

const chainOf = (...backends: Backend[]) => createChain(backends, { probeTtlMs: 1000 });

describe('the chain of backends', () => {
  test('backends are asked in order and the first success logs in, naming that backend', async () => {
    const first = scripted('first', accept('one'));
    const second = scripted('second', accept('two'));
    const third = scripted('third', accept('two'));
    const chain = chainOf(first, second, third);
    assert.deepEqual(await chain.verify('alice', 'two', '192.0.2.1'), { ok: true, backend: 'second' });
    assert.deepEqual([first.calls.length, second.calls.length, third.calls.length], [1, 1, 0]);
    assert.deepEqual(await chain.verify('alice', 'one', '192.0.2.1'), { ok: true, backend: 'first' });
    assert.equal(second.calls.length, 1, 'a success stops the chain');
  });

  test('bad_credentials everywhere is bad_credentials', async () => {
    const chain = chainOf(scripted('a', accept('x')), scripted('b', accept('y')));
    const result = await chain.verify('alice', 'z', '192.0.2.1');
    assert.equal(result.ok ? 'ok' : result.failure, 'bad_credentials');
  });

  for (const outage of ['upstream_unavailable', 'upstream_misconfigured'] as const) {
    test(`${outage} asks the next backend, which may still log in`, async () => {
      const chain = chainOf(scripted('down', refuse(outage)), scripted('up', accept('pw')));
      assert.deepEqual(await chain.verify('alice', 'pw', '192.0.2.1'), { ok: true, backend: 'up' });
    });

    test(`${outage} is kept over a later bad_credentials, so an outage locks nobody out`, async () => {
      const chain = chainOf(scripted('down', refuse(outage)), scripted('up', accept('other')));
      const result = await chain.verify('alice', 'pw', '192.0.2.1');
      assert.deepEqual(result, { ok: false, failure: outage, reason: outage, backend: 'down' });
    });

    test(`${outage} is kept when it comes after a bad_credentials too`, async () => {
      const chain = chainOf(scripted('up', accept('other')), scripted('down', refuse(outage)));
      const result = await chain.verify('alice', 'pw', '192.0.2.1');
      assert.equal(result.ok ? 'ok' : result.failure, outage);
    });
  }

  test('the first outage class is kept when several backends are out', async () => {
    const chain = chainOf(
      scripted('tls', refuse('upstream_misconfigured')),
      scripted('gone', refuse('upstream_unavailable')),
    );
    const result = await chain.verify('alice', 'pw', '192.0.2.1');
    assert.equal(result.ok ? 'ok' : result.failure, 'upstream_misconfigured');
  });

  test('a domain-restricted backend is asked only for local@domain usernames of its domains', async () => {
    const staff = scripted('staff', accept('pw'), ['staff.example']);
    const pupils = scripted('pupils', accept('pw'), ['pupils.example', 'alumni.example']);
    const chain = chainOf(staff, pupils);
    assert.deepEqual(await chain.verify('ann@pupils.example', 'pw', '192.0.2.1'), {
      ok: true,
      backend: 'pupils',
    });
    assert.deepEqual(await chain.verify('bob@staff.example', 'pw', '192.0.2.1'), {
      ok: true,
      backend: 'staff',
    });
    assert.deepEqual(staff.calls, ['bob@staff.example']);
    assert.deepEqual(pupils.calls, ['ann@pupils.example']);
  });

  test('an unrestricted backend serves every username, with or without a domain', async () => {
    const any = scripted('any', accept('pw'));
    const staff = scripted('staff', accept('pw'), ['staff.example']);
    const chain = chainOf(staff, any);
    assert.deepEqual(await chain.verify('carol', 'pw', '192.0.2.1'), { ok: true, backend: 'any' });
    assert.deepEqual(await chain.verify('x@elsewhere.example', 'pw', '192.0.2.1'), {
      ok: true,
      backend: 'any',
    });
    assert.deepEqual(staff.calls, []);
  });

  test('a username no backend serves is bad_credentials without contacting any', async () => {
    const staff = scripted('staff', accept('pw'), ['staff.example']);
    const chain = chainOf(staff);
    for (const username of [
      'carol',
      'x@other.example',
      'x@staff.example.evil',
      'x@@staff.example',
      '@staff.example',
      'x@',
    ]) {
      const result = await chain.verify(username, 'pw', '192.0.2.1');
      assert.deepEqual(result, {
        ok: false,
        failure: 'bad_credentials',
        reason: 'no backend serves this username',
      });
    }
    assert.deepEqual(staff.calls, []);
  });

  // The wait was once drawn from every backend's refusals mixed, so a disabled user on a fast
  // domain waited as long as a slow domain's directory takes.
  test("a refusal decided without the backends imitates the backends of the username's own route", () => {
    const slow = Object.assign(scripted('slow', accept('pw'), ['staff.example']), {
      refusalDelayMs: () => 600,
    });
    const fast = Object.assign(scripted('fast', accept('pw'), ['pupils.example']), {
      refusalDelayMs: () => 30,
    });
    const everyone = Object.assign(scripted('everyone', accept('pw')), { refusalDelayMs: () => 5 });
    const chain = chainOf(slow, fast, everyone);
    assert.equal(chain.refusalDelayMs('kim@pupils.example'), 30 + 5, 'fast, then the catch-all');
    assert.equal(chain.refusalDelayMs('kim@staff.example'), 600 + 5, 'slow, then the catch-all');
    assert.equal(chain.refusalDelayMs('kim'), 5, 'only the catch-all serves a bare name');
    assert.equal(
      chainOf(slow, fast).refusalDelayMs('kim@other.example'),
      0,
      'no route: no backend to imitate',
    );
    // The backends are asked one after another: the longest verify is the sum of theirs.
    assert.equal(chainOf(slow, fast).maxVerifyMs, 2000);
  });

  test('a username no backend serves is refused at once by the chain (the login procedure times it)', async () => {
    const only = scripted('only', accept('pw'), ['staff.example']);
    const chain = chainOf(only);
    const result = await chain.verify('u@other.example', 'pw', '192.0.2.1');
    assert.deepEqual(result, {
      ok: false,
      failure: 'bad_credentials',
      reason: 'no backend serves this username',
    });
    assert.deepEqual(only.calls, []);
  });

  test('readiness probes every backend, names the failing one, and caches the answers', async () => {
    const up = scripted('mail', accept('pw'));
    const down = scripted('directory-down', accept('pw'));
    const chain = chainOf(up, down);
    const answers = await Promise.all(Array.from({ length: 20 }, () => chain.readiness?.()));
    assert.deepEqual(answers[0], { mail: 'ok', 'directory-down': 'upstream_unavailable: ECONNREFUSED' });
    assert.equal(up.probes(), 1);
    assert.equal(down.probes(), 1);
  });

  test('stats add up the backends and report the worst breaker; close closes every backend', async () => {
    const a = scripted('a', accept('pw'));
    const b = scripted('b-down', accept('pw'));
    const chain = chainOf(a, b);
    assert.deepEqual(chain.stats(), { active: 2, queued: 4, breaker: 'open' });
    await chain.close?.();
    assert.ok(a.closed() && b.closed());
  });

  test('mailDomain and backendsFor read local@domain strictly and case-insensitively', () => {
    assert.equal(mailDomain('Ann@Staff.Example'), 'staff.example');
    assert.equal(mailDomain('ann'), null);
    assert.equal(mailDomain('a@b@c'), null);
    const staff = scripted('staff', accept('pw'), ['staff.example']);
    assert.deepEqual(
      backendsFor([staff], 'ANN@STAFF.EXAMPLE').map((b) => b.name),
      ['staff'],
    );
  });
});
