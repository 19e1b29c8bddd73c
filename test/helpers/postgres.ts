// PostgreSQL for tests: the machine's server on 127.0.0.1:5432 when one
// answers (fast), else a private instance in a temp dir. Each test gets its
// own database, so parallel test files never see each other's rows.
import { randomBytes } from 'node:crypto';
import { chmod, chown, copyFile, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ensureDebianPackage, expandPath } from './apt.ts';
import { lookupSystemUser, type ManagedChild, removeNow, removeOnExit, spawnManaged } from './child.ts';
import { freePort } from './ports.ts';

const SHARED_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const INITDB_GLOB = '/usr/lib/postgresql/*/bin/initdb';
const START_ATTEMPTS = 3;
const START_TIMEOUT_MS = 30_000;

/** A database made for one test; drop() removes it even if clients are still connected. */
export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

export interface TestPostgres {
  /** Superuser URL of the `postgres` database (trust auth, no password). */
  adminUrl: string;
  /** Creates an empty database `clubhouse_test_<hex>`. */
  createDatabase(): Promise<TestDatabase>;
  /** Drops databases still left; stops the server only if it is a private one. */
  stop(): Promise<void>;
  /** True when this handle started its own server. */
  private: boolean;
  /** Private only: shuts the server down (fast shutdown); connections are refused until startServer(). */
  stopServer?(): Promise<void>;
  /** Private only: starts the server again on the same data dir and port. */
  startServer?(): Promise<void>;
}

export interface PostgresOptions {
  /** Start a private instance even if a server answers on 5432 (for stop/start tests). */
  private?: boolean;
  /** Private, with ssl=on and this certificate; the key is copied for the server's user. */
  tls?: { certFile: string; keyFile: string };
  /** Private: listen_addresses (default 127.0.0.1), e.g. a second loopback address for name checks. */
  listenAddresses?: string;
}

/** Returns the shared PostgreSQL on 5432 if it answers (unless `private`), else starts one. */
export async function startPostgres(options: PostgresOptions = {}): Promise<TestPostgres> {
  const wantsPrivate = options.private || options.tls !== undefined || options.listenAddresses !== undefined;
  if (!wantsPrivate && (await answers(SHARED_URL))) return handle(SHARED_URL, false);
  return startPrivatePostgres(options);
}

/** Wraps a server URL with database bookkeeping; `server` is set for a private one. */
function handle(adminUrl: string, isPrivate: boolean, server?: PrivateServer): TestPostgres {
  const created = new Set<string>();
  const dropDatabase = async (name: string): Promise<void> => {
    // FORCE: a test that failed midway may leave a pool open on it.
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    created.delete(name);
  };
  const result: TestPostgres = {
    adminUrl,
    private: isPrivate,
    async createDatabase() {
      const name = `clubhouse_test_${randomBytes(6).toString('hex')}`;
      await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
      created.add(name);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      return { url: url.toString(), name, drop: () => dropDatabase(name) };
    },
    async stop() {
      if (server) return server.destroy();
      for (const name of [...created]) await dropDatabase(name);
    },
  };
  if (server) {
    result.stopServer = () => server.stopServer();
    result.startServer = () => server.startServer();
  }
  return result;
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** True if `url` accepts a connection and `select 1` right now. */
async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  // A refused connection also emits 'error'; without a listener it would throw.
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

interface PrivateServer {
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  destroy(): Promise<void>;
}

async function startPrivatePostgres(options: PostgresOptions): Promise<TestPostgres> {
  await ensureDebianPackage(INITDB_GLOB, 'postgresql');
  const binDir = newestBinDir();
  // initdb and postgres refuse to run as root; the package's postgres user owns everything.
  const owner = await lookupSystemUser('postgres');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clubhouse-postgres-'));
  removeOnExit(dir);
  const asPostgres = { uid: owner.uid, gid: owner.gid, cwd: dir, env: { PATH: process.env.PATH, LANG: 'C' } };
  try {
    await chown(dir, owner.uid, owner.gid);
    const dataDir = path.join(dir, 'data');
    const initdb = spawnManaged(
      path.join(binDir, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
      asPostgres,
    );
    if ((await initdb.exited) !== 0) throw new Error(`initdb failed:\n${await initdb.finalOutput()}`);
    const tlsArgs: string[] = [];
    if (options.tls !== undefined) {
      // PostgreSQL refuses a key that others can read or that it does not own.
      const certFile = path.join(dir, 'server.pem');
      const keyFile = path.join(dir, 'server.key');
      await copyFile(options.tls.certFile, certFile);
      await copyFile(options.tls.keyFile, keyFile);
      await chmod(keyFile, 0o600);
      for (const file of [certFile, keyFile]) await chown(file, owner.uid, owner.gid);
      tlsArgs.push('-c', 'ssl=on', '-c', `ssl_cert_file=${certFile}`, '-c', `ssl_key_file=${keyFile}`);
    }
    const listen = options.listenAddresses ?? '127.0.0.1';

    let port = 0;
    let server: ManagedChild | undefined;
    const startServer = async (): Promise<void> => {
      // Fast settings: the data is thrown away, so durability buys nothing.
      server = spawnManaged(
        path.join(binDir, 'postgres'),
        [
          '-D',
          dataDir,
          '-p',
          String(port),
          '-k',
          dir,
          '-c',
          `listen_addresses=${listen}`,
          ...tlsArgs,
          '-c',
          'fsync=off',
          '-c',
          'synchronous_commit=off',
          '-c',
          'full_page_writes=off',
        ],
        // SIGQUIT is PostgreSQL's immediate shutdown: right for a dying test process.
        { ...asPostgres, exitSignal: 'SIGQUIT' },
      );
      await waitUntilAccepting(adminUrl(port), server);
    };
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await startServer();
        break;
      } catch (error) {
        await server?.stop('SIGQUIT');
        // Another process may have taken the port between freePort() and bind().
        if (attempt < START_ATTEMPTS && /could not bind|Address already in use/.test(String(error))) continue;
        throw error;
      }
    }
    // SIGINT = fast shutdown: rolls back open transactions and disconnects clients.
    const stopServer = async (): Promise<void> => server?.stop('SIGINT', 10_000);
    let destroyed: Promise<void> | undefined;
    return handle(adminUrl(port), true, {
      stopServer,
      startServer: async () => {
        if (server?.running()) return;
        await startServer();
      },
      destroy() {
        destroyed ??= stopServer().then(() => removeNow(dir));
        return destroyed;
      },
    });
  } catch (error) {
    removeNow(dir);
    throw error;
  }
}

function adminUrl(port: number): string {
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

/** The bin dir of the highest PostgreSQL major version installed. */
function newestBinDir(): string {
  const versionOf = (initdb: string): number => Number(initdb.split(path.sep).at(-3));
  const newest = expandPath(INITDB_GLOB).sort((a, b) => versionOf(b) - versionOf(a))[0];
  if (!newest) throw new Error(`no ${INITDB_GLOB}`);
  return path.dirname(newest);
}

async function waitUntilAccepting(url: string, server: ManagedChild): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await answers(url))) {
    if (!server.running()) throw new Error(`postgres exited:\n${await server.finalOutput()}`);
    if (Date.now() > deadline)
      throw new Error(`postgres not ready after ${START_TIMEOUT_MS} ms:\n${server.output()}`);
    await sleep(100);
  }
}
