// Contract §3: the Retry-After of a refused guess is when it could be admitted at the earliest. With
// the recorded failures at the limit, when the limit-th newest leaves the window; when it takes the
// guesses in flight to reach the limit, when those are done, never a placeholder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientKey, guessRetryAfterMs } from '../../src/auth/throttle.ts';

const WINDOW = 900_000;
const NOW = 1_800_000_000_000;
/** The longest one attempt lasts: how long a guess can stay in flight. */
const IN_FLIGHT = 20_000;

test('a lock made only of guesses in flight lasts as long as they can, not a whole window', () => {
  assert.equal(guessRetryAfterMs({ failures: [], pending: 5 }, 5, NOW, WINDOW, IN_FLIGHT), IN_FLIGHT);
  assert.equal(
    guessRetryAfterMs({ failures: [NOW - 1000], pending: 7 }, 5, NOW, WINDOW, IN_FLIGHT),
    IN_FLIGHT,
  );
  const failures = [NOW - 10_000, NOW - 20_000, NOW - 30_000, NOW - 40_000];
  assert.equal(guessRetryAfterMs({ failures, pending: 1 }, 5, NOW, WINDOW, IN_FLIGHT), IN_FLIGHT);
});

test('never longer than the window, even for an attempt that could outlast it', () => {
  assert.equal(guessRetryAfterMs({ failures: [], pending: 5 }, 5, NOW, 10_000, IN_FLIGHT), 10_000);
});

test('recorded failures at the limit: the limit-th newest leaving the window, guesses in flight or not', () => {
  const failures = [NOW - 1000, NOW - 2000, NOW - 3000];
  assert.equal(guessRetryAfterMs({ failures, pending: 0 }, 3, NOW, WINDOW, IN_FLIGHT), WINDOW - 3000);
  assert.equal(guessRetryAfterMs({ failures, pending: 4 }, 3, NOW, WINDOW, IN_FLIGHT), WINDOW - 3000);
});

// Contract §3: an IPv6 client is keyed by its prefix (THROTTLE_IPV6_PREFIX, default 64).
test('client keys: IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 by its network', () => {
  assert.equal(clientKey('198.51.100.7', 64), 'ip:198.51.100.7');
  assert.equal(clientKey('::ffff:198.51.100.7', 64), 'ip:198.51.100.7');
  assert.equal(clientKey('2001:db8:1:2:3:4:5:6', 64), 'ip:2001:db8:1:2::/64');
  assert.equal(clientKey('2001:DB8:1:2::9', 64), 'ip:2001:db8:1:2::/64');
  assert.equal(clientKey('2001:db8:1:2:3:4:5:6', 56), 'ip:2001:db8:1::/56');
  assert.equal(clientKey('2001:db8:1:2:3:4:5:6', 128), 'ip:2001:db8:1:2:3:4:5:6/128');
  assert.equal(clientKey('::1', 64), 'ip:::/64');
  assert.equal(clientKey('not an address', 64), 'ip:not an address');
});
