// Contract §3: the durations a refusal decided without the backend waits are the backend's own
// recent refusals of a wrong password, drawn at random (so the spread matches too), seeded at start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { REFUSAL_SAMPLES, RefusalTiming } from '../../src/backends/refusal-timing.ts';

const draws = (timing: RefusalTiming, n: number) =>
  new Set(Array.from({ length: n }, () => timing.delayMs()));

test('the seed is waited until a first refusal is measured', () => {
  const timing = new RefusalTiming(2000);
  assert.deepEqual(draws(timing, 20), new Set([2000]));
  timing.record(1500);
  assert.deepEqual(draws(timing, 20), new Set([1500]));
});

test('every recorded duration is drawn, and nothing else (the spread is kept, not only the middle)', () => {
  const timing = new RefusalTiming(2000);
  for (const ms of [1900, 2000, 2100]) timing.record(ms);
  // Missing one of three in 600 draws has a probability of 3 × (2/3)^600: never.
  assert.deepEqual(draws(timing, 600), new Set([1900, 2000, 2100]));
});

test('only the latest samples are kept, so the wait follows a backend that changes speed', () => {
  const timing = new RefusalTiming(2000, 3);
  for (const ms of [10, 20, 30, 40, 50]) timing.record(ms);
  assert.deepEqual(draws(timing, 600), new Set([30, 40, 50]));
});

test('by default the latest 64 are kept: the 65th replaces the first, the 66th the second', () => {
  assert.equal(REFUSAL_SAMPLES, 64);
  const timing = new RefusalTiming(2000);
  const upTo = (last: number, from = 1) =>
    new Set(Array.from({ length: last - from + 1 }, (_, i) => from + i));
  for (let ms = 1; ms <= 64; ms++) timing.record(ms);
  // Missing one of 64 in 20 000 draws has a probability of 64 × (63/64)^20000 < 10^-130: never.
  assert.deepEqual(draws(timing, 20_000), upTo(64));
  timing.record(65);
  assert.deepEqual(draws(timing, 20_000), upTo(65, 2));
  timing.record(66);
  assert.deepEqual(draws(timing, 20_000), upTo(66, 3));
});

test('a duration that cannot be one (negative, NaN, infinite) is not recorded', () => {
  const timing = new RefusalTiming(2000);
  for (const ms of [-1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) timing.record(ms);
  assert.deepEqual(draws(timing, 20), new Set([2000]));
});

test('nor does it take the place of a kept one', () => {
  const timing = new RefusalTiming(2000, 3);
  for (const ms of [10, 20, 30]) timing.record(ms);
  // Two, not three: a slot moved per refused value would then not come round to where it was.
  for (const ms of [-1, Number.NaN]) timing.record(ms);
  timing.record(40);
  assert.deepEqual(draws(timing, 600), new Set([20, 30, 40]));
});
