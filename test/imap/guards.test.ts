// Contract §5: the guards around IMAP logins (concurrency cap with a bounded queue, single-flight,
// circuit breaker) and the classification of failures, with a scripted login function.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VerifyResult } from '../../src/backends/authenticator.ts';
import { CircuitBreaker } from '../../src/backends/breaker.ts';
import { createImapBackend, type ImapSeams } from '../../src/backends/imap/backend.ts';
import { classifyImapError, ImapClosedError, ImapProtocolError } from '../../src/backends/imap/lines.ts';
import type { ImapSettings } from '../../src/backends/imap/settings.ts';
import { RefusalTiming } from '../../src/backends/refusal-timing.ts';

/** The IMAP backend of these settings with scripted seams (its logins never connect). */
const imapBackend = (imap: ImapSettings, seams: ImapSeams) =>
  createImapBackend({ kind: 'imap', name: 'imap', domains: null, imap }, undefined, seams);

const SETTINGS: ImapSettings = {
  host: '127.0.0.1',
  port: 1,
  security: 'plain',
  caFile: null,
  timeoutMs: 1000,
  maxConcurrency: 2,
  queueLimit: 1,
  forwardClientIp: false,
};

/** A login function whose attempts finish only when the test says so. */
function gatedLogin() {
  const pending: { username: string; resolve: (r: VerifyResult) => void }[] = [];
  let calls = 0;
  const login = (_s: ImapSettings, _t: unknown, username: string) =>
    new Promise<VerifyResult>((resolve) => {
      calls++;
      pending.push({ username, resolve });
    });
  return {
    login,
    pending,
    get calls() {
      return calls;
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('IMAP guards', () => {
  test('only refused passwords are timed for refusals decided without IMAP (contract §3)', async () => {
    const answers: Record<string, VerifyResult> = {
      ok: { ok: true },
      down: { ok: false, failure: 'upstream_unavailable', reason: 'ECONNREFUSED' },
      odd: { ok: false, failure: 'upstream_misconfigured', reason: 'TLS' },
      wrong: { ok: false, failure: 'bad_credentials', reason: 'IMAP NO' },
    };
    // A clock that moves only inside a login, by 37 ms: every attempt lasts exactly that.
    const clock = { ms: 0 };
    const login = async (_s: ImapSettings, _t: unknown, username: string) => {
      clock.ms += 37;
      return answers[username]!;
    };
    const auth = imapBackend(SETTINGS, {
      login,
      timing: new RefusalTiming(60_000),
      now: () => clock.ms,
    });
    assert.equal(auth.refusalDelayMs(), 60_000, 'the seed until a refusal is measured');
    for (const username of ['ok', 'down', 'odd']) await auth.verify(username, 'pw', '192.0.2.1');
    assert.equal(auth.refusalDelayMs(), 60_000, 'successes, outages and misconfigurations are no refusals');
    await auth.verify('wrong', 'pw', '192.0.2.1');
    assert.equal(auth.refusalDelayMs(), 37, 'the refused login, as long as it took');
    assert.equal(
      auth.maxVerifyMs,
      2 * SETTINGS.timeoutMs,
      'a queue wait and a login, each within the deadline',
    );
  });

  test('a refusal is timed from before its queue wait, as the client waited (contract §3)', async () => {
    const gate = gatedLogin();
    const clock = { ms: 0 };
    const auth = imapBackend(
      { ...SETTINGS, maxConcurrency: 1 },
      {
        login: gate.login,
        timing: new RefusalTiming(60_000),
        now: () => clock.ms,
      },
    );
    const refused: VerifyResult = { ok: false, failure: 'bad_credentials', reason: 'IMAP NO' };
    const first = auth.verify('a', 'pw', '192.0.2.1');
    const second = auth.verify('b', 'pw', '192.0.2.1');
    await tick();
    assert.deepEqual(auth.stats(), { active: 1, queued: 1, breaker: 'closed' });
    // The first login lasts 30 ms while the second waits for its slot, then the second lasts 20.
    clock.ms = 30;
    gate.pending[0]!.resolve(refused);
    await first;
    await tick();
    assert.equal(gate.calls, 2, 'the queued attempt started when the slot freed');
    clock.ms = 50;
    gate.pending[1]!.resolve(refused);
    await second;
    const draws = new Set(Array.from({ length: 200 }, () => auth.refusalDelayMs()));
    // Missing one of two in 200 draws has a probability of 2 × 2^-200: never.
    assert.deepEqual(draws, new Set([30, 50]), 'the second refusal counts its 30 ms in the queue');
  });

  test('at most IMAP_MAX_CONCURRENCY attempts run; more wait in a bounded queue; a full queue fails', async () => {
    const gate = gatedLogin();
    const auth = imapBackend(SETTINGS, { login: gate.login });
    const results = ['a', 'b', 'c', 'd'].map((u) => auth.verify(u, 'pw', '192.0.2.1'));
    await tick();
    assert.equal(gate.calls, 2, 'two run');
    assert.deepEqual(auth.stats(), { active: 2, queued: 1, breaker: 'closed' });
    assert.deepEqual(await results[3], {
      ok: false,
      failure: 'upstream_unavailable',
      reason: 'IMAP queue full',
    });
    gate.pending[0]!.resolve({ ok: true });
    await tick();
    assert.equal(gate.calls, 3, 'the queued attempt starts when a slot frees');
    for (const p of gate.pending.slice(1)) p.resolve({ ok: true });
    assert.deepEqual(await Promise.all(results.slice(0, 3)), [{ ok: true }, { ok: true }, { ok: true }]);
    assert.deepEqual(auth.stats(), { active: 0, queued: 0, breaker: 'closed' });
  });

  test('a queued attempt gives up after IMAP_TIMEOUT_MS', async () => {
    const gate = gatedLogin();
    const auth = imapBackend(
      { ...SETTINGS, maxConcurrency: 1, timeoutMs: 50 },
      {
        login: gate.login,
      },
    );
    const first = auth.verify('a', 'pw', '192.0.2.1');
    const second = auth.verify('b', 'pw', '192.0.2.1');
    assert.deepEqual(await second, {
      ok: false,
      failure: 'upstream_unavailable',
      reason: 'waited too long for an IMAP slot',
    });
    gate.pending[0]!.resolve({ ok: true });
    assert.deepEqual(await first, { ok: true });
    assert.equal(gate.calls, 1);
  });

  test('identical concurrent attempts share one IMAP login; different passwords do not', async () => {
    const gate = gatedLogin();
    const auth = imapBackend(
      { ...SETTINGS, maxConcurrency: 100, queueLimit: 100 },
      {
        login: gate.login,
      },
    );
    const same = Array.from({ length: 50 }, () => auth.verify('alice', 'pw', '192.0.2.1'));
    const other = auth.verify('alice', 'other', '192.0.2.1');
    await tick();
    assert.equal(gate.calls, 2);
    for (const p of gate.pending) p.resolve({ ok: true });
    await Promise.all([...same, other]);
    // Once settled, a new attempt logs in again (no caching of results).
    const again = auth.verify('alice', 'pw', '192.0.2.1');
    await tick();
    assert.equal(gate.calls, 3);
    gate.pending[2]!.resolve({ ok: true });
    await again;
  });

  test('the circuit breaker opens after repeated unavailable answers, probes once, and closes on success', async () => {
    let now = 0;
    const breaker = new CircuitBreaker({ threshold: 3, openMs: 5000, now: () => now });
    let calls = 0;
    let answer: VerifyResult = { ok: false, failure: 'upstream_unavailable', reason: 'ECONNREFUSED' };
    const auth = imapBackend(SETTINGS, {
      login: async () => {
        calls++;
        return answer;
      },
      breaker,
    });
    for (let i = 0; i < 3; i++) await auth.verify(`u${i}`, 'pw', '192.0.2.1');
    assert.equal(calls, 3);
    assert.equal(auth.stats().breaker, 'open');
    assert.deepEqual(await auth.verify('x', 'pw', '192.0.2.1'), {
      ok: false,
      failure: 'upstream_unavailable',
      reason: 'circuit open',
    });
    assert.equal(calls, 3, 'fails fast while open');
    now += 5000;
    assert.equal(auth.stats().breaker, 'half_open');
    await auth.verify('probe', 'pw', '192.0.2.1');
    assert.equal(calls, 4, 'one probe goes through');
    assert.equal(auth.stats().breaker, 'open', 'a failed probe re-opens');
    now += 5000;
    answer = { ok: false, failure: 'bad_credentials', reason: 'IMAP NO' };
    await auth.verify('probe2', 'pw', '192.0.2.1');
    assert.equal(auth.stats().breaker, 'closed', 'any answer from the server closes it');
    answer = { ok: true };
    assert.deepEqual(await auth.verify('y', 'pw', '192.0.2.1'), { ok: true });
  });

  test('bad credentials never open the breaker', async () => {
    const auth = imapBackend(SETTINGS, {
      login: async () => ({ ok: false, failure: 'bad_credentials', reason: 'IMAP NO' }),
    });
    for (let i = 0; i < 20; i++) await auth.verify(`u${i}`, 'pw', '192.0.2.1');
    assert.equal(auth.stats().breaker, 'closed');
  });
});

describe('classifyImapError', () => {
  // The NO / [UNAVAILABLE] / BAD verdicts are decided by verifyImapLogin (test/imap/client.test.ts).
  const cases: [string, unknown, string][] = [
    ['out of protocol', new ImapProtocolError('PREAUTH greeting'), 'upstream_misconfigured'],
    ['LOGINDISABLED', new ImapProtocolError('LOGINDISABLED'), 'upstream_misconfigured'],
    ['BYE', new ImapClosedError('BYE: shutting down'), 'upstream_unavailable'],
    ['closed', new ImapClosedError('connection closed'), 'upstream_unavailable'],
    ['self-signed', { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }, 'upstream_misconfigured'],
    ['unknown CA', { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }, 'upstream_misconfigured'],
    ['wrong host', { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, 'upstream_misconfigured'],
    ['refused', { code: 'ECONNREFUSED' }, 'upstream_unavailable'],
    ['reset', { code: 'ECONNRESET' }, 'upstream_unavailable'],
    ['TLS alert', { code: 'ERR_SSL_WRONG_VERSION_NUMBER' }, 'upstream_misconfigured'],
    ['anything else', new Error('something odd'), 'upstream_unavailable'],
  ];
  for (const [name, error, failure] of cases) {
    test(name, () => {
      assert.equal(classifyImapError(error).failure, failure);
    });
  }
});
