// The 20-second version of `npm run soak`: mixed traffic from this process against the
// service as its own process, with the same assertions on errors and leaks (no error, the session
// table exactly logins minus logouts, no file descriptor left open, memory not running away).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSoak } from '../../bench/soak.ts';

test('20 s of mixed load: no error, sessions consistent, no leaked descriptors or runaway memory', async () => {
  const result = await runSoak({ seconds: 20, rate: 150, windowSeconds: 5, warmupSeconds: 2 });
  assert.deepEqual(result.errorSamples, []);
  assert.equal(result.errors, 0);
  assert.ok(result.requests >= 2000, `${result.requests} requests`);
  assert.ok(result.logins > 50 && result.logouts > 0, `${result.logins} logins, ${result.logouts} logouts`);
  assert.equal(
    result.sessionsInTable,
    result.sessionsExpected,
    'every login that was not logged out is a session, no more',
  );
  assert.ok(result.fdsAfter <= result.fdsBefore + 5, `descriptors ${result.fdsBefore} → ${result.fdsAfter}`);
  const rss = result.windows.map((w) => w.rssMiB);
  assert.ok(Math.max(...rss) < 300, `RSS ${rss.join(', ')} MiB`);
});
