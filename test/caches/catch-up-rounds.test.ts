// One catch-up at the shared stores serves a batch of requests, and each request is answered only
// after a catch-up that began after it arrived (CatchUpRounds, src/store/freshness/gate.ts). Driven
// by hand: each catch-up waits until the test releases it, so the interleavings are the test's, not
// the scheduler's. And the gate over several sources: one round trip per store, windows open only
// while answering.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { answerWindows, CatchUpRounds, freshnessGate } from '../../src/store/freshness/gate.ts';

/** Catch-up rounds the test ends one by one; `began` counts them. */
function manualRounds(options: { batch?: boolean } = {}) {
  const pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const rounds = new CatchUpRounds(options);
  let began = 0;
  rounds.add(
    () =>
      new Promise<void>((resolve, reject) => {
        began++;
        pending.push({ resolve, reject });
      }),
  );
  return {
    rounds,
    began: () => began,
    end: async (err?: Error) => {
      const round = pending.shift();
      if (round === undefined) throw new Error('no catch-up in flight');
      if (err === undefined) round.resolve();
      else round.reject(err);
      // Let the waiters, then the next catch-up's start (in a check phase), run.
      for (let i = 0; i < 5; i++) await Promise.resolve();
      await turn();
    },
  };
}

/** One turn of the event loop: a catch-up asked for begins in its check phase. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Past a hold for a fuller batch (1 ms) and the check phase where the held catch-up then begins:
 * timers fire in the order they fall due, so the hold's has fired before this one.
 */
const pastHold = async () => {
  await new Promise<void>((resolve) => setTimeout(resolve, 5));
  await turn();
};

const settled = (promise: Promise<void>) => {
  const state = { done: false, failed: false };
  promise.then(
    () => {
      state.done = true;
    },
    () => {
      state.failed = true;
    },
  );
  return state;
};

describe('catch-up rounds', () => {
  test('a request while a catch-up is out waits for the next one, shared by every such request', async () => {
    const m = manualRounds();
    const first = settled(m.rounds.caughtUp());
    assert.equal(m.began(), 0, 'the catch-up begins at the end of the turn');
    await turn();
    assert.equal(m.began(), 1);
    const second = settled(m.rounds.caughtUp());
    const third = settled(m.rounds.caughtUp());
    assert.equal(m.began(), 1, 'no second catch-up while one is out');
    await m.end();
    assert.equal(first.done, true);
    assert.equal(second.done, false, 'the catch-up that was out began before the second request');
    assert.equal(m.began(), 2, 'the next catch-up began when the first ended');
    await m.end();
    assert.equal(second.done && third.done, true, 'both shared the second catch-up');
    assert.equal(m.began(), 2);
  });

  test('a failed catch-up rejects every request waiting on it, and the next is tried afresh', async () => {
    const m = manualRounds();
    const first = settled(m.rounds.caughtUp());
    await turn();
    const second = settled(m.rounds.caughtUp());
    await m.end(new Error('store down'));
    assert.equal(first.failed, true);
    await m.end(new Error('store down'));
    assert.equal(second.failed, true);
    const third = settled(m.rounds.caughtUp());
    await turn();
    await m.end();
    assert.equal(third.done, true);
  });

  test('answers from memory are open only inside answerFromMemory, and only for the memories named', () => {
    const windows = answerWindows();
    const gate = freshnessGate({}, windows);
    assert.equal(windows.sessions.open || windows.groups.open, false);
    assert.deepEqual(
      gate.answerFromMemory(() => [windows.sessions.open, windows.groups.open], ['sessions']),
      [true, false],
    );
    assert.throws(() => gate.answerFromMemory(() => assert.fail('boom'), ['sessions', 'groups']));
    assert.equal(windows.sessions.open || windows.groups.open, false, 'shut again after a throw');
  });

  test('the gate: one round per store, memories behind one store share it, none is nothing to wait for', async () => {
    const database = manualRounds();
    const redis = manualRounds();
    const gate = freshnessGate(
      { sessions: { rounds: redis.rounds }, groups: { rounds: database.rounds } },
      answerWindows(),
    );
    const both = settled(gate.catchUp(['sessions', 'groups'])!);
    const check = settled(gate.catchUp(['sessions'])!);
    await turn();
    assert.deepEqual([database.began(), redis.began()], [1, 1], 'one round trip each');
    await redis.end();
    assert.equal(check.done, true, 'the check waits for the sessions alone');
    assert.equal(both.done, false, 'the group page waits for both');
    await database.end();
    assert.equal(both.done, true);
    assert.equal(freshnessGate({}, answerWindows()).catchUp(['groups']), null, 'no memory: no catch-up');
  });

  for (const batch of [false, true]) {
    test(`property${batch ? ', batched' : ''}: every request resolves only after a catch-up that began after it arrived`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.constantFrom('request', 'turn', 'end', 'wait'), { maxLength: 40 }),
          async (steps) => {
            const m = manualRounds({ batch });
            const requests: { arrivedAfter: number; resolvedBy: number | null }[] = [];
            let ended = 0;
            for (const step of steps) {
              if (step === 'request') {
                const request = { arrivedAfter: m.began(), resolvedBy: null as number | null };
                requests.push(request);
                void m.rounds.caughtUp().then(() => {
                  request.resolvedBy = ended;
                });
              } else if (step === 'turn') {
                await turn();
              } else if (step === 'wait') {
                await pastHold();
              } else if (m.began() > ended) {
                ended++;
                await m.end();
              }
            }
            // A held catch-up begins when its hold runs out.
            await pastHold();
            while (m.began() > ended) {
              ended++;
              await m.end();
              await pastHold();
            }
            for (const request of requests) {
              assert.notEqual(request.resolvedBy, null, 'every request is answered');
              // Catch-ups end in the order they began: the one that resolved it is number resolvedBy,
              // which must have begun after the request (more than arrivedAfter had begun by then).
              assert.ok(request.resolvedBy! > request.arrivedAfter, JSON.stringify(request));
            }
          },
        ),
        { numRuns: batch ? 100 : 200 },
      );
    });
  }

  test('batched: the next catch-up waits for those that waited plus as many as were answered', async () => {
    const m = manualRounds({ batch: true });
    const answered = [settled(m.rounds.caughtUp()), settled(m.rounds.caughtUp())];
    await turn();
    assert.equal(m.began(), 1, 'a request while none is out is never held');
    const waited = settled(m.rounds.caughtUp());
    await m.end();
    assert.equal(answered[0]!.done && answered[1]!.done, true);
    assert.equal(m.began(), 1, 'held: one waits, and the two answered are expected back');
    const back = settled(m.rounds.caughtUp());
    await turn();
    assert.equal(m.began(), 1, 'two of three');
    const again = settled(m.rounds.caughtUp());
    await turn();
    assert.equal(m.began(), 2, 'three of three: it begins');
    await m.end();
    assert.equal(waited.done && back.done && again.done, true, 'all three shared it');
  });

  test('batched: a hold lasts 1 ms at most, and the next catch-up is held again', async () => {
    const m = manualRounds({ batch: true });
    const first = settled(m.rounds.caughtUp());
    await turn();
    const second = settled(m.rounds.caughtUp());
    await m.end();
    assert.equal(first.done, true);
    assert.equal(m.began(), 1, 'held for the answered one');
    await pastHold();
    assert.equal(m.began(), 2, 'the hold ran out');
    const third = settled(m.rounds.caughtUp());
    await m.end();
    assert.equal(second.done, true);
    assert.equal(m.began(), 2, 'held again');
    await pastHold();
    assert.equal(m.began(), 3);
    await m.end();
    assert.equal(third.done, true);
  });
});
