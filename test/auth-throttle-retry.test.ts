// Contract §3, issue 12: the Retry-After of a guess refused because of guesses in flight is when the
// lock could lift at the earliest if those guesses all fail, never a placeholder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { guessRetryAfterMs } from '../src/auth/throttle.ts';

const WINDOW = 900_000;
const NOW = 1_800_000_000_000;

test('as many guesses in flight as the limit: locked for a whole window if they fail', () => {
  assert.equal(guessRetryAfterMs({ failures: [], pending: 5 }, 5, NOW, WINDOW), WINDOW);
  assert.equal(guessRetryAfterMs({ failures: [NOW - 1000], pending: 7 }, 5, NOW, WINDOW), WINDOW);
});

test('guesses in flight are the newest failures-to-be: the limit-th newest of all decides', () => {
  // In flight: 1 (now); failures 10, 20, 30 and 40 s ago. If it fails, the lock lifts when the one
  // of 40 s ago leaves the window.
  const failures = [NOW - 10_000, NOW - 20_000, NOW - 30_000, NOW - 40_000];
  assert.equal(guessRetryAfterMs({ failures, pending: 1 }, 5, NOW, WINDOW), WINDOW - 40_000);
  assert.equal(guessRetryAfterMs({ failures, pending: 2 }, 5, NOW, WINDOW), WINDOW - 30_000);
});

test('no guess in flight: the limit-th newest failure leaving the window, as for recorded failures', () => {
  const failures = [NOW - 1000, NOW - 2000, NOW - 3000];
  assert.equal(guessRetryAfterMs({ failures, pending: 0 }, 3, NOW, WINDOW), WINDOW - 3000);
});
