// A database from before contract §9 (no client_ip, user_agent, last_seen on sessions) is
// migrated in place, and its sessions show what is known — when they were created — rather than
// failing. On SQLite (migrations 1–4 applied, then the service starts) and on PostgreSQL (the same
// state made by undoing version 4).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { hashSessionId, newSessionId } from '../../src/auth/sessions.ts';
import { migratePostgres } from '../../src/store/postgres/schema.ts';
import { migrate } from '../../src/store/sql/migrate.ts';
import { SQLITE_DIALECT } from '../../src/store/sqlite/dialect.ts';
import { openSqliteDatabase, sqliteDriver } from '../../src/store/sqlite/driver.ts';
import { SQLITE_MIGRATIONS } from '../../src/store/sqlite/schema.ts';
import { fakeAuthenticator, startTestApp } from '../helpers/app.ts';
import { startPostgres } from '../helpers/postgres.ts';

const postgres = await startPostgres();
after(() => postgres.stop());

const CREATED = Date.UTC(2026, 10, 20, 9, 30, 15, 250);

/** Starts the service on `databaseUrl` and lists the old session through the API. */
async function listThroughApi(databaseUrl: string, id: string) {
  const t = await startTestApp({ authenticator: fakeAuthenticator({}), env: { DATABASE_URL: databaseUrl } });
  try {
    const cookie = `sessionid=${id}`;
    assert.equal((await t.fastify.inject({ url: '/api/auth/check', headers: { cookie } })).body, '"alice"');
    const response = await t.fastify.inject({ url: '/api/auth/sessions', headers: { cookie } });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Record<string, unknown>[];
  } finally {
    await t.close();
  }
}

const expected = (views: Record<string, unknown>[], listedAt: number) => {
  assert.equal(views.length, 1);
  const [view] = views as [Record<string, unknown>];
  assert.match(String(view['id']), /^[0-9a-f]{32}$/);
  // The requests that listed it saw it: last seen now (to the second), though never written before.
  const seen = Date.parse(String(view['last_seen']));
  assert.ok(seen >= Math.floor(listedAt / 1000) * 1000 && seen <= Date.now(), String(view['last_seen']));
  assert.deepEqual(
    { ...view, id: undefined, last_seen: undefined },
    {
      id: undefined,
      created: '2026-11-20T09:30:15Z',
      last_seen: undefined,
      ip: null,
      user_agent: null,
      method: null,
      current: true,
    },
  );
};

test('SQLite: a session from before the upgrade lists with its creation time and no IP or user agent', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'clubhouse-upgrade-'));
  try {
    const path = join(dir, 'old.db');
    const db = openSqliteDatabase(path);
    sqliteDriver(db).runSync(migrate(SQLITE_DIALECT, SQLITE_MIGRATIONS.slice(0, 4), CREATED), 'write');
    const id = newSessionId();
    db.prepare('INSERT INTO users (username, active, created_at) VALUES (?, 1, ?)').run('alice', CREATED);
    db.prepare('INSERT INTO sessions (id_hash, username, created_at, expires_at) VALUES (?, ?, ?, ?)').run(
      hashSessionId(id),
      'alice',
      CREATED,
      Date.now() + 86_400_000,
    );
    db.close();
    const listedAt = Date.now();
    expected(await listThroughApi(`sqlite:${path}`, id), listedAt);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PostgreSQL: a session from before the upgrade lists with its creation time and no IP or user agent', async () => {
  const database = await postgres.createDatabase();
  try {
    await migratePostgres(database.url);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const id = newSessionId();
    try {
      // The database as version 3 left it, holding a session.
      await client.query(
        'ALTER TABLE sessions DROP COLUMN client_ip, DROP COLUMN user_agent, DROP COLUMN last_seen',
      );
      await client.query('DELETE FROM schema_migrations WHERE version = 4');
      await client.query('INSERT INTO users (username, active, created_at) VALUES ($1, true, $2)', [
        'alice',
        CREATED,
      ]);
      await client.query(
        'INSERT INTO sessions (id_hash, username, created_at, expires_at) VALUES ($1, $2, $3, $4)',
        [hashSessionId(id), 'alice', CREATED, Date.now() + 86_400_000],
      );
    } finally {
      await client.end();
    }
    const listedAt = Date.now();
    expected(await listThroughApi(database.url, id), listedAt);
  } finally {
    await database.drop();
  }
});
