// The suites where sessions, users and groups meet, with sessions and throttle counters in Redis and
// everything else in PostgreSQL (the production pairing): login, throttling, disable/import
// revocation across the two stores. Imported, not copied; its own process under node --test.
process.env['CLUBHOUSE_TEST_STORE'] = 'redis-postgres';

await import('./auth-login.test.ts');
await import('./auth-throttle.test.ts');
await import('./groups.test.ts');
await import('./store-unavailable.test.ts');
await import('./my-sessions.test.ts');
