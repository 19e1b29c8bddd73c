// The API suites again, on PostgreSQL: each startTestApp below gets a fresh database on the harness
// PostgreSQL (see helpers/app.ts). The suites are imported, not copied; tests that read SQLite's
// own tables skip themselves with the reason. node --test runs this file in its own process.
process.env['CLUBHOUSE_TEST_STORE'] = 'postgres';

await import('./wire.test.ts');
await import('./auth-login.test.ts');
await import('./auth-throttle.test.ts');
await import('./auth-csrf.test.ts');
await import('./session-lifecycle.test.ts');
await import('./groups.test.ts');
await import('./store-unavailable.test.ts');
await import('./my-sessions.test.ts');
