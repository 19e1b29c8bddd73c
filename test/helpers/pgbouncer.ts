// PgBouncer (Debian `pgbouncer`) in transaction mode in front of a harness PostgreSQL, as docs/operations.md
// tells operators to run it. The handle looks like a TestPostgres whose URLs go through PgBouncer:
// databases are created and dropped on the server itself, clients connect through the bouncer.
import { chown, mkdtemp, writeFile } from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ensureDebianPackage } from './apt.ts';
import { lookupSystemUser, type ManagedChild, removeNow, removeOnExit, spawnManaged } from './child.ts';
import { freePort, waitForPort } from './ports.ts';
import type { TestDatabase, TestPostgres } from './postgres.ts';

const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';
const START_ATTEMPTS = 3;

export interface TestPgBouncer extends TestPostgres {
  /** The port PgBouncer listens on (127.0.0.1). */
  readonly port: number;
  /** The server behind it. */
  readonly server: TestPostgres;
}

/** The settings docs/operations.md asks for, plus small pools: the shared test server has 100 slots. */
function configuration(dir: string, port: number, serverUrl: URL): string {
  return `[databases]
; Any database name the client asks for, on the one server (the harness makes one per test).
* = host=${serverUrl.hostname} port=${serverUrl.port || 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${path.join(dir, 'userlist.txt')}
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 4
server_idle_timeout = 5
; Only what pg sends that PgBouncer does not track itself; clubhouse sends no timeouts any more.
ignore_startup_parameters =
`;
}

/** Starts PgBouncer in transaction mode in front of `server`; stop() stops the bouncer only. */
export async function startPgBouncer(server: TestPostgres): Promise<TestPgBouncer> {
  await ensureDebianPackage(PGBOUNCER_BIN, 'pgbouncer');
  // PgBouncer refuses to run as root; the postgres user exists wherever PostgreSQL is installed.
  const owner = await lookupSystemUser('postgres');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clubhouse-pgbouncer-'));
  removeOnExit(dir);
  const serverUrl = new URL(server.adminUrl);
  const user = decodeURIComponent(serverUrl.username) || 'postgres';
  let child: ManagedChild | undefined;
  let port = 0;
  try {
    await chown(dir, owner.uid, owner.gid);
    await writeFile(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const ini = path.join(dir, 'pgbouncer.ini');
      await writeFile(ini, configuration(dir, port, serverUrl));
      child = spawnManaged(PGBOUNCER_BIN, [ini], { uid: owner.uid, gid: owner.gid, cwd: dir });
      try {
        await waitForPort(port, '127.0.0.1', 15_000);
        if (!child.running()) throw new Error('exited');
        break;
      } catch (error) {
        const output = await child.finalOutput();
        await child.stop('SIGKILL');
        // Another process may have taken the port between freePort() and bind().
        if (attempt < START_ATTEMPTS && /in use|bind/i.test(output)) continue;
        throw new Error(`pgbouncer did not start (${String(error)}):\n${output}`);
      }
    }
  } catch (error) {
    removeNow(dir);
    throw error;
  }
  const through = (url: string): string => {
    const rewritten = new URL(url);
    rewritten.host = `127.0.0.1:${port}`;
    return rewritten.toString();
  };
  const running = child;
  // A handle shared by a whole test process (helpers/app.ts) is never stopped by a test: it must
  // not keep the process alive. child.ts still kills it when the process exits.
  running.child.unref();
  for (const pipe of [running.child.stdout, running.child.stderr]) (pipe as Socket | null)?.unref();
  return {
    port,
    server,
    adminUrl: through(server.adminUrl),
    private: true,
    async createDatabase(): Promise<TestDatabase> {
      const database = await server.createDatabase();
      return { ...database, url: through(database.url) };
    },
    async stop() {
      // SIGINT: PgBouncer's immediate shutdown.
      await running.stop('SIGINT', 3000);
      removeNow(dir);
    },
  };
}
