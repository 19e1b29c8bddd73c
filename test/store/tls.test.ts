// PostgreSQL and Redis over TLS (docs/operations.md: TLS to the stores), as managed services require.
// A private PostgreSQL with ssl=on and a private redis-server with a tls-port serve a certificate
// from the harness CA, on 127.0.0.1 and 127.0.0.2 (the certificate names only the first). A trusted
// certificate connects and is reported "verified"; a wrong CA or host name is refused at start-up
// with the reason; TLS asked for is never traded for plaintext; unverified TLS only when
// sslmode=require says so.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { configReport } from '../../src/config/report.ts';
import { openStores } from '../../src/store/open.ts';
import type { Stores } from '../../src/store/types.ts';
import { startTestApp } from '../helpers/app.ts';
import { makeTestCertificates, type TestCertificates } from '../helpers/certs.ts';
import { pgPool } from '../helpers/engines.ts';
import { startPostgres, type TestDatabase, type TestPostgres } from '../helpers/postgres.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const dir = mkdtempSync(join(tmpdir(), 'clubhouse-store-tls-'));
let trusted: TestCertificates;
let stranger: TestCertificates;
let postgres: TestPostgres;
let redis: TestRedis;
let db: TestDatabase;

before(async () => {
  mkdirSync(join(dir, 'trusted'));
  mkdirSync(join(dir, 'stranger'));
  trusted = await makeTestCertificates(join(dir, 'trusted'));
  // Another CA: its certificate is just as valid, but not the one the settings trust.
  stranger = await makeTestCertificates(join(dir, 'stranger'));
  [postgres, redis] = await Promise.all([
    startPostgres({ tls: trusted, listenAddresses: '127.0.0.1,127.0.0.2' }),
    startRedis({ tls: trusted, bind: '127.0.0.1 127.0.0.2' }),
  ]);
  db = await postgres.createDatabase();
});
after(async () => {
  await db?.drop();
  await postgres?.stop();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** DATABASE_URL of the test database on `host`, with `query` appended. */
const databaseUrl = (query: string, host = '127.0.0.1') => {
  const url = new URL(db.url);
  url.hostname = host;
  return `${url.toString()}${query}`;
};

/** Opens the stores as the server does at start-up: settings parsed, then connected. */
const open = (env: Record<string, string>) => openStores(loadConfig(env).store);

async function withStores(env: Record<string, string>, work: (stores: Stores) => Promise<void>) {
  const stores = await open(env);
  try {
    await work(stores);
  } finally {
    await stores.close();
  }
}

/** What PostgreSQL itself says about the pool's connection. */
async function serverSideSsl(stores: Stores): Promise<boolean> {
  const pool = pgPool(stores);
  const { rows } = await pool.query<{ ssl: boolean }>(
    'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
  );
  return rows[0]!.ssl;
}

describe('PostgreSQL over TLS', () => {
  test('verify-full with DATABASE_CA_FILE connects over TLS, migrates, and reports "verified"', async () => {
    await withStores(
      { DATABASE_URL: databaseUrl('?sslmode=verify-full'), DATABASE_CA_FILE: trusted.caFile },
      async (stores) => {
        assert.equal(await serverSideSsl(stores), true);
        assert.deepEqual(stores.tls, { database: 'verified', sessions: 'verified' });
        assert.deepEqual(await stores.groups.list(), []);
      },
    );
  });

  test('sslrootcert in the URL works the same; a CA alone implies verify-full', async () => {
    await withStores(
      { DATABASE_URL: databaseUrl(`?sslmode=verify-full&sslrootcert=${trusted.caFile}`) },
      async (stores) => assert.equal(await serverSideSsl(stores), true),
    );
    await withStores({ DATABASE_URL: databaseUrl(''), DATABASE_CA_FILE: trusted.caFile }, async (stores) => {
      assert.equal(await serverSideSsl(stores), true);
      assert.equal(stores.tls?.database, 'verified');
    });
  });

  test('a certificate from another CA is refused at start-up, with the reason', async () => {
    await assert.rejects(
      open({ DATABASE_URL: databaseUrl('?sslmode=verify-full'), DATABASE_CA_FILE: stranger.caFile }),
      /self[- ]signed certificate|unable to verify|unable to get local issuer/i,
    );
    // sslrootcert=system: the system's roots only, which do not include the harness CA.
    await assert.rejects(
      open({ DATABASE_URL: databaseUrl('?sslmode=verify-full&sslrootcert=system') }),
      /self[- ]signed certificate|unable to verify|unable to get local issuer/i,
    );
  });

  test('a host name the certificate does not carry is refused at start-up', async () => {
    await assert.rejects(
      open({
        DATABASE_URL: databaseUrl('?sslmode=verify-full', '127.0.0.2'),
        DATABASE_CA_FILE: trusted.caFile,
      }),
      /does not match certificate's altnames.*127\.0\.0\.2/,
    );
  });

  test('sslmode=require encrypts without verifying, says so, and config check warns', async () => {
    const env = { DATABASE_URL: databaseUrl('?sslmode=require', '127.0.0.2') };
    await withStores(env, async (stores) => {
      assert.equal(await serverSideSsl(stores), true);
      assert.equal(stores.tls?.database, 'not verified');
    });
    const report = configReport(loadConfig(env));
    assert.equal(report.settings['(database TLS)'], 'not verified');
    assert.ok(report.warnings.some((w) => /sslmode=require: TLS without checking/.test(w)));
  });

  test('modes that may fall back to plaintext, and contradictions, are invalid settings', () => {
    for (const [env, variable] of [
      [{ DATABASE_URL: databaseUrl('?sslmode=prefer') }, 'DATABASE_URL'],
      [{ DATABASE_URL: databaseUrl('?sslmode=allow') }, 'DATABASE_URL'],
      [{ DATABASE_URL: databaseUrl('?sslmode=verify-ca') }, 'DATABASE_URL'],
      [{ DATABASE_URL: databaseUrl('?sslmode=no-verify') }, 'DATABASE_URL'],
      [{ DATABASE_URL: databaseUrl('?ssl=true') }, 'DATABASE_URL'],
      [
        { DATABASE_URL: databaseUrl('?sslmode=require'), DATABASE_CA_FILE: trusted.caFile },
        'DATABASE_CA_FILE',
      ],
      [
        { DATABASE_URL: databaseUrl('?sslmode=disable'), DATABASE_CA_FILE: trusted.caFile },
        'DATABASE_CA_FILE',
      ],
      [
        { DATABASE_URL: databaseUrl('?sslmode=verify-full'), DATABASE_CA_FILE: join(dir, 'nope.pem') },
        'DATABASE_CA_FILE',
      ],
      [{ DATABASE_URL: 'sqlite:x.db', DATABASE_CA_FILE: trusted.caFile }, 'DATABASE_CA_FILE'],
    ] as const) {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable,
        JSON.stringify(env),
      );
    }
  });

  test('a server that declines TLS is refused, never used in plaintext', async () => {
    // Answers every SSLRequest with "N" (no TLS), as a server without ssl=on does.
    const server = net.createServer((socket) => {
      socket.once('data', () => socket.write('N'));
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    try {
      await assert.rejects(
        open({
          DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/x?sslmode=verify-full`,
          DATABASE_CA_FILE: trusted.caFile,
        }),
        /does not support SSL/,
      );
    } finally {
      server.close();
    }
  });
});

describe('Redis over TLS', () => {
  const sessionsEnv = (sessionStore: string, caFile?: string) => ({
    DATABASE_URL: `sqlite:${join(dir, 'redis-tls.db')}`,
    SESSION_STORE: sessionStore,
    REDIS_KEY_PREFIX: redis.keyPrefix(),
    ...(caFile === undefined ? {} : { REDIS_CA_FILE: caFile }),
  });

  test('rediss:// with REDIS_CA_FILE stores sessions and reports "verified"', async () => {
    await withStores(sessionsEnv(redis.tlsUrl!, trusted.caFile), async (stores) => {
      const idHash = Buffer.alloc(32, 7);
      await stores.users.recordLogin('alice', Date.now(), true);
      await stores.sessions.create(
        {
          idHash,
          username: 'alice',
          createdAt: Date.now(),
          expiresAt: Date.now() + 60_000,
          clientIp: null,
          userAgent: null,
        },
        100,
      );
      assert.equal((await stores.sessions.get(idHash, Date.now()))?.username, 'alice');
      assert.deepEqual(stores.tls, { database: 'local', sessions: 'verified' });
    });
  });

  test('a certificate from another CA is refused at start-up, with the reason', async () => {
    await assert.rejects(open(sessionsEnv(redis.tlsUrl!, stranger.caFile)), (err: unknown) => {
      assert.match(String((err as Error).cause), /self[- ]signed certificate|unable to verify|local issuer/i);
      return true;
    });
  });

  test('a host name the certificate does not carry is refused at start-up', async () => {
    const wrongHost = redis.tlsUrl!.replace('127.0.0.1', '127.0.0.2');
    await assert.rejects(open(sessionsEnv(wrongHost, trusted.caFile)), (err: unknown) => {
      assert.match(String((err as Error).cause), /does not match certificate's altnames/);
      return true;
    });
  });

  test('rediss:// to a plaintext port fails instead of talking in clear', async () => {
    const plainPort = new URL(redis.url).port;
    await assert.rejects(
      open(sessionsEnv(`rediss://127.0.0.1:${plainPort}`, trusted.caFile)),
      /sessions unavailable/,
    );
  });

  test('REDIS_CA_FILE without rediss:// is an invalid setting', () => {
    assert.throws(
      () => loadConfig(sessionsEnv(redis.url, trusted.caFile)),
      (err: unknown) => err instanceof ConfigError && err.variable === 'REDIS_CA_FILE',
    );
  });
});

describe('/readyz and config check name the TLS state of each store', () => {
  test('verified PostgreSQL and Redis', async () => {
    const env = {
      DATABASE_URL: databaseUrl('?sslmode=verify-full'),
      DATABASE_CA_FILE: trusted.caFile,
      SESSION_STORE: redis.tlsUrl!,
      REDIS_CA_FILE: trusted.caFile,
      REDIS_KEY_PREFIX: redis.keyPrefix(),
    };
    const t = await startTestApp({ env });
    try {
      const response = await t.fastify.inject({ url: '/readyz' });
      assert.deepEqual(response.json().tls, { database: 'verified', sessions: 'verified' });
    } finally {
      await t.close();
    }
    const report = configReport(loadConfig(env));
    assert.equal(report.settings['(database TLS)'], 'verified');
    assert.equal(report.settings['(sessions TLS)'], 'verified');
    assert.equal(report.settings['DATABASE_CA_FILE'], trusted.caFile);
  });

  test('plaintext to a host that is not loopback is a warning', () => {
    const report = configReport(
      loadConfig({
        DATABASE_URL: 'postgres://app@db.example.org/clubhouse',
        SESSION_STORE: 'redis://cache.example.org',
      }),
    );
    assert.equal(report.settings['(database TLS)'], 'off');
    assert.ok(report.warnings.some((w) => /DATABASE_URL reaches db\.example\.org without TLS/.test(w)));
    assert.ok(report.warnings.some((w) => /SESSION_STORE reaches cache\.example\.org without TLS/.test(w)));
  });
});
