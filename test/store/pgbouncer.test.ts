// What only PgBouncer in transaction mode shows (helpers/pgbouncer.ts, docs/operations.md's recipe
// for many instances): the server-side timeouts still apply (as role defaults that migrate sets, not
// startup parameters), and forgetting DATABASE_TRANSACTION_POOLER fails at start-up. The API suites
// and the store contract run through PgBouncer too (helpers/stores.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { openStores } from '../../src/store/open.ts';
import { query } from '../../src/store/postgres/driver.ts';
import { pgPool } from '../helpers/engines.ts';
import { startPgBouncer, type TestPgBouncer } from '../helpers/pgbouncer.ts';
import type { TestDatabase } from '../helpers/postgres.ts';
import { startPostgres } from '../helpers/postgres.ts';

describe('PgBouncer in transaction mode', () => {
  let bouncer: TestPgBouncer;
  let db: TestDatabase;
  before(async () => {
    bouncer = await startPgBouncer(await startPostgres());
    db = await bouncer.createDatabase();
  });
  after(async () => {
    await db?.drop();
    await bouncer?.stop();
  });

  test('a statement past statement_timeout is cancelled by the server (57014): 503, not a hang', async () => {
    const stores = await openStores(
      loadConfig({ DATABASE_URL: db.url, DATABASE_TRANSACTION_POOLER: 'true' }).store,
    );
    try {
      const pool = pgPool(stores);
      // Several at once, so PgBouncer hands out several server connections, the migration's among them.
      const seen = await Promise.all(
        Array.from({ length: 6 }, () =>
          pool.query<{ s: string; l: string }>(
            "SELECT current_setting('statement_timeout') AS s, current_setting('lock_timeout') AS l, pg_sleep(0.2)",
          ),
        ),
      );
      for (const { rows } of seen) assert.deepEqual({ ...rows[0] }, { s: '5s', l: '3s', pg_sleep: '' });
      await assert.rejects(query(pool, 'SELECT pg_sleep(30)'), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError);
        assert.equal((err.cause as { code?: string }).code, '57014');
        return true;
      });
    } finally {
      await stores.close();
    }
  });

  test('without DATABASE_TRANSACTION_POOLER, start-up fails and names the setting', async () => {
    await assert.rejects(
      openStores(loadConfig({ DATABASE_URL: db.url }).store),
      /unsupported startup parameter: statement_timeout.*set DATABASE_TRANSACTION_POOLER=true/,
    );
  });
});
