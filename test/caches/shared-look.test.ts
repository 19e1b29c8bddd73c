// Issue 24: one look at the stores serves a batch of requests, and each request is answered only
// after a look that began after it arrived (src/store/shared-look.ts). Driven by hand: each look
// waits until the test releases it, so the interleavings are the test's, not the scheduler's.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { SharedLook } from '../../src/store/shared-look.ts';

/** A look whose rounds the test ends one by one; `began` counts them. */
function manualLook() {
  const pending: { resolve: () => void; reject: (err: Error) => void }[] = [];
  const look = new SharedLook();
  let began = 0;
  look.add(
    () =>
      new Promise<void>((resolve, reject) => {
        began++;
        pending.push({ resolve, reject });
      }),
  );
  return {
    look,
    began: () => began,
    end: async (err?: Error) => {
      const round = pending.shift();
      if (round === undefined) throw new Error('no look in flight');
      if (err === undefined) round.resolve();
      else round.reject(err);
      // Let the waiters, then the next look's start (in a check phase), run.
      for (let i = 0; i < 5; i++) await Promise.resolve();
      await turn();
    },
  };
}

/** One turn of the event loop: a look asked for begins in its check phase. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

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

describe('the shared look', () => {
  test('a request while a look is out waits for the next one, shared by every such request', async () => {
    const m = manualLook();
    const first = settled(m.look.wait());
    assert.equal(m.began(), 0, 'the look begins at the end of the turn');
    await turn();
    assert.equal(m.began(), 1);
    const second = settled(m.look.wait());
    const third = settled(m.look.wait());
    assert.equal(m.began(), 1, 'no second look while one is out');
    await m.end();
    assert.equal(first.done, true);
    assert.equal(second.done, false, 'the look that was out began before the second request');
    assert.equal(m.began(), 2, 'the next look began when the first ended');
    await m.end();
    assert.equal(second.done && third.done, true, 'both shared the second look');
    assert.equal(m.began(), 2);
  });

  test('a failed look rejects every request waiting on it, and the next look is tried afresh', async () => {
    const m = manualLook();
    const first = settled(m.look.wait());
    await turn();
    const second = settled(m.look.wait());
    await m.end(new Error('store down'));
    assert.equal(first.failed, true);
    await m.end(new Error('store down'));
    assert.equal(second.failed, true);
    const third = settled(m.look.wait());
    await turn();
    await m.end();
    assert.equal(third.done, true);
  });

  test('answers from memory are open only inside atOnce', () => {
    const look = new SharedLook();
    assert.equal(look.open, false);
    assert.equal(
      look.atOnce(() => look.open),
      true,
    );
    assert.throws(() => look.atOnce(() => assert.fail('boom')));
    assert.equal(look.open, false, 'closed again after a throw');
  });

  test('property: every request resolves only after a look that began after it arrived', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('request', 'turn', 'end'), { maxLength: 40 }),
        async (steps) => {
          const m = manualLook();
          const requests: { arrivedAfter: number; resolvedBy: number | null }[] = [];
          let ended = 0;
          for (const step of steps) {
            if (step === 'request') {
              const request = { arrivedAfter: m.began(), resolvedBy: null as number | null };
              requests.push(request);
              void m.look.wait().then(() => {
                request.resolvedBy = ended;
              });
            } else if (step === 'turn') {
              await turn();
            } else if (m.began() > ended) {
              ended++;
              await m.end();
            }
          }
          await turn();
          while (m.began() > ended) {
            ended++;
            await m.end();
          }
          for (const request of requests) {
            assert.notEqual(request.resolvedBy, null, 'every request is answered');
            // Looks end in the order they began: the one that resolved it is number resolvedBy, which
            // must have begun after the request (more than arrivedAfter looks had begun by then).
            assert.ok(request.resolvedBy! > request.arrivedAfter, JSON.stringify(request));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
