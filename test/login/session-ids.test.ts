// Contract §2: a session id is 32 characters of [a-z0-9] from a CSPRNG (≥ 160 bits) and a CSRF token
// 32 of [A-Za-z0-9]. Their form alone proves nothing of their randomness (an id of 16 random
// characters written twice once passed every test). Here each position must be uniform over its
// alphabet and independent of every other position: a repeated half, a fixed prefix, a biased modulo
// or a counter all fail. The thresholds are many standard deviations out, so a good generator fails
// with a probability far below one in a million runs.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newCsrfToken, newSessionId } from '../../src/auth/sessions.ts';
import { fakeAuthenticator, loginAs, startTestApp } from '../helpers/app.ts';

const LOWER_ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const MIXED_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Pearson's chi-square of each position's counts against the uniform distribution; with k symbols it
 * has k − 1 degrees of freedom, mean k − 1 and standard deviation √(2(k − 1)).
 */
function worstPositionChiSquare(samples: readonly string[], alphabet: string): number {
  const length = samples[0]!.length;
  const expected = samples.length / alphabet.length;
  let worst = 0;
  for (let position = 0; position < length; position++) {
    const counts = new Map<string, number>();
    for (const sample of samples) counts.set(sample[position]!, (counts.get(sample[position]!) ?? 0) + 1);
    let chi = 0;
    for (const symbol of alphabet) chi += ((counts.get(symbol) ?? 0) - expected) ** 2 / expected;
    worst = Math.max(worst, chi);
  }
  return worst;
}

/** The largest number of samples in which two given positions hold the same symbol, over all pairs. */
function worstPairAgreement(samples: readonly string[]): number {
  const length = samples[0]!.length;
  let worst = 0;
  for (let i = 0; i < length; i++) {
    for (let j = i + 1; j < length; j++) {
      let same = 0;
      for (const sample of samples) if (sample[i] === sample[j]) same++;
      worst = Math.max(worst, same);
    }
  }
  return worst;
}

function assertUniform(samples: readonly string[], alphabet: string, pattern: RegExp): void {
  for (const sample of samples) assert.match(sample, pattern);
  assert.equal(new Set(samples).size, samples.length, 'no value twice');
  const k = alphabet.length;
  const chi = worstPositionChiSquare(samples, alphabet);
  // 12 standard deviations above the mean: the worst of 32 positions stays far below it.
  assert.ok(chi < k - 1 + 12 * Math.sqrt(2 * (k - 1)), `a position is not uniform (chi-square ${chi})`);
  // Two positions agree in 1/k of the samples; 10 binomial standard deviations above that.
  const n = samples.length;
  const mean = n / k;
  const bound = mean + 10 * Math.sqrt(n * (1 / k) * (1 - 1 / k)) + 2;
  const agreement = worstPairAgreement(samples);
  assert.ok(agreement < bound, `two positions agree in ${agreement} of ${n} values (expected about ${mean})`);
}

describe('session ids and CSRF tokens are uniformly random over their whole length', () => {
  test('session ids: every position uniform over [a-z0-9], no two positions related', () => {
    assertUniform(
      Array.from({ length: 20_000 }, () => newSessionId()),
      LOWER_ALNUM,
      /^[a-z0-9]{32}$/,
    );
  });

  test('CSRF tokens: every position uniform over [A-Za-z0-9], no two positions related', () => {
    assertUniform(
      Array.from({ length: 20_000 }, () => newCsrfToken()),
      MIXED_ALNUM,
      /^[A-Za-z0-9]{32}$/,
    );
  });

  test('the cookies a login sets are such values (not some other generator)', async () => {
    const t = await startTestApp({ authenticator: fakeAuthenticator({ alice: 'pw' }) });
    try {
      const ids: string[] = [];
      const tokens: string[] = [];
      for (let i = 0; i < 400; i++) {
        const { sessionid, csrftoken } = await loginAs(t.fastify, 'alice', 'pw');
        ids.push(sessionid);
        tokens.push(csrftoken);
      }
      assertUniform(ids, LOWER_ALNUM, /^[a-z0-9]{32}$/);
      assertUniform(tokens, MIXED_ALNUM, /^[A-Za-z0-9]{32}$/);
    } finally {
      await t.close();
    }
  });
});
