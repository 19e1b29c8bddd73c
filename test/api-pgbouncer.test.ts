// Issue 17: the API suites and the store contract again, through PgBouncer in transaction mode in
// front of PostgreSQL (helpers/pgbouncer.ts), the README's recipe for many instances. Every
// startTestApp below gets a fresh database reached through the bouncer. Imported, not copied; its
// own process under node --test.
process.env['CLUBHOUSE_TEST_STORE'] = 'pgbouncer';

await import('./auth-login.test.ts');
await import('./auth-throttle.test.ts');
await import('./auth-csrf.test.ts');
await import('./session-lifecycle.test.ts');
await import('./groups.test.ts');
await import('./wire.test.ts');
await import('./store-contract.test.ts');
