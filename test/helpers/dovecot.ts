// A private Dovecot IMAP server for tests: its own config, certificates,
// users, ports and log in a temp dir, run in the foreground as a child of
// the test process, so the service is tested against the real thing.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { ensureDebianPackage } from './apt.ts';
import { makeTestCertificates } from './certs.ts';
import { lookupSystemUser, type ManagedChild, removeNow, removeOnExit, spawnManaged } from './child.ts';
import { readLines } from './lines.ts';
import { freePorts } from './ports.ts';

const DOVECOT_BIN = '/usr/sbin/dovecot';
// Ships with dovecot-core, as the server does: parses a config file exactly as the server does.
const DOVECONF_BIN = '/usr/bin/doveconf';
const START_ATTEMPTS = 3;
const START_TIMEOUT_MS = 20_000;

/** An account in the test Dovecot's passdb. */
export interface TestUser {
  username: string;
  password: string;
}

/** The accounts the demo script signs in with. */
export const DEMO_USERS: readonly TestUser[] = Object.freeze([
  { username: 'alice', password: 'alice-password' },
  { username: 'bob', password: 'bob-password' },
  { username: 'carol', password: 'carol-password' },
]);

// Passwords that break naive quoting or encoding in an IMAP client: UTF-8,
// IMAP quoted-string specials, shell/format metacharacters, a long literal.
const AWKWARD_USERS: readonly TestUser[] = [
  { username: 'dave', password: 'dave-password' },
  { username: 'uma', password: 'pässwörd-日本語-✓' },
  { username: 'quinn', password: 'a b "c" \'d\' \\e' },
  { username: 'percy', password: '100%$HOME$$' },
  { username: 'long', password: 'ab€'.repeat(342).slice(0, 1024) },
];

const NUMBERED_USERS: readonly TestUser[] = Array.from({ length: 100 }, (_, i) => {
  const n = String(i).padStart(3, '0');
  return { username: `user${n}`, password: `password-${n}` };
});

/** Every account the test Dovecot knows by default. */
export const TEST_USERS: readonly TestUser[] = Object.freeze([
  ...DEMO_USERS,
  ...AWKWARD_USERS,
  ...NUMBERED_USERS,
]);

/** Returns the TEST_USERS entry for `username`; throws if there is none. */
export function testUser(username: string): TestUser {
  const user = TEST_USERS.find((candidate) => candidate.username === username);
  if (!user) throw new Error(`no test user ${username}`);
  return user;
}

export interface DovecotOptions {
  /** Seconds Dovecot waits before answering a failed login; default 0. */
  authFailureDelay?: number;
  /** Default true; false = `ssl = no`: no STARTTLS capability, no TLS listener. */
  tls?: boolean;
  /** Accounts in the passdb; default TEST_USERS. */
  users?: readonly TestUser[];
  /** `disable_plaintext_auth = yes`, so the plain port advertises LOGINDISABLED. */
  loginDisabled?: boolean;
  /** `login_trusted_networks`: clients there may name the address they speak for (ID x-originating-ip). */
  trustedNetworks?: string;
}

export interface Dovecot {
  host: '127.0.0.1';
  /** Plain text + STARTTLS listener. */
  plainPort: number;
  /** Implicit TLS listener; 0 when tls is false. */
  tlsPort: number;
  /** PEM file of the CA that signed the server certificate (SAN localhost, 127.0.0.1). */
  caFile: string;
  caPem: string;
  dir: string;
  users: readonly TestUser[];
  /** Successful IMAP logins in Dovecot's log, optionally only those of `username`. */
  loginCount(username?: string): Promise<number>;
  /** Dovecot's whole log so far. */
  log(): Promise<string>;
  /** A setting as this instance's Dovecot reads its config (`doveconf -h`), e.g. "2 secs". */
  setting(name: string): Promise<string>;
  /** Stops Dovecot and deletes its temp dir. */
  stop(): Promise<void>;
}

/**
 * Starts a private Dovecot and resolves once its plain port greets `* OK`.
 * Call stop() when done; the process is also killed when the test process exits.
 */
export async function startDovecot(options: DovecotOptions = {}): Promise<Dovecot> {
  await ensureDebianPackage(DOVECOT_BIN, 'dovecot-imapd');
  const users = options.users ?? TEST_USERS;
  const tls = options.tls ?? true;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'clubhouse-dovecot-'));
  removeOnExit(dir);
  try {
    // Dovecot's unprivileged processes (auth, login, imap) must reach the
    // files in here; mkdtemp makes the dir 0700 root.
    await chmod(dir, 0o755);
    // Mail processes may not run as root; the package's own `dovecot` user
    // is a non-root uid that exists wherever dovecot-imapd is installed.
    const mailUser = await lookupSystemUser('dovecot');
    const home = path.join(dir, 'home');
    await mkdir(home);
    await chown(home, mailUser.uid, mailUser.gid);
    const certs = await makeTestCertificates(dir);
    const passdbFile = path.join(dir, 'users');
    await writeFile(passdbFile, passwdFile(users), { mode: 0o644 });
    const logFile = path.join(dir, 'dovecot.log');

    for (let attempt = 1; ; attempt++) {
      // With loginDisabled the plain port is a relay (see below), so Dovecot
      // listens on an internal port and the relay on plainPort.
      const [imapPort, tlsPort] = (await freePorts(2)) as [number, number];
      const configFile = path.join(dir, 'dovecot.conf');
      await writeFile(
        configFile,
        dovecotConfig({
          dir,
          home,
          passdbFile,
          logFile,
          certFile: certs.certFile,
          keyFile: certs.keyFile,
          imapPort,
          tlsPort: tls ? tlsPort : 0,
          tls,
          loginDisabled: options.loginDisabled ?? false,
          authFailureDelay: options.authFailureDelay ?? 0,
          trustedNetworks: options.trustedNetworks ?? '',
          mailUid: mailUser.uid,
          mailGid: mailUser.gid,
        }),
      );
      const server = spawnManaged(DOVECOT_BIN, ['-F', '-c', configFile]);
      const relay = options.loginDisabled ? await startRemoteLookingRelay(imapPort) : undefined;
      const plainPort = relay ? relay.port : imapPort;
      try {
        await waitForGreeting(plainPort, server, logFile);
      } catch (error) {
        await relay?.close();
        await server.stop();
        // Another process may have grabbed a port between freePorts() and
        // Dovecot's bind(); that is worth another try with new ports.
        if (attempt < START_ATTEMPTS && /Address already in use/.test(String(error))) continue;
        throw error;
      }
      let stopped: Promise<void> | undefined;
      return {
        host: '127.0.0.1',
        plainPort,
        tlsPort: tls ? tlsPort : 0,
        caFile: certs.caFile,
        caPem: certs.caPem,
        dir,
        users,
        loginCount: (username) => countLogins(logFile, username),
        log: () => readFile(logFile, 'utf8').catch(() => ''),
        async setting(name) {
          const { stdout } = await promisify(execFile)(DOVECONF_BIN, ['-c', configFile, '-h', name]);
          return stdout.trim();
        },
        stop() {
          stopped ??= (async () => {
            await relay?.close();
            await server.stop('SIGTERM', 3000);
            removeNow(dir);
          })();
          return stopped;
        },
      };
    }
  } catch (error) {
    removeNow(dir);
    throw error;
  }
}

/**
 * One passwd-file line per user. Passwords are stored as SHA256 hashes: a
 * {PLAIN} password containing ':' or odd bytes would break the file format.
 */
function passwdFile(users: readonly TestUser[]): string {
  return users
    .map(({ username, password }) => {
      if (!/^[A-Za-z0-9._@-]+$/.test(username)) throw new Error(`unsupported test username ${username}`);
      const hash = createHash('sha256').update(password, 'utf8').digest('base64');
      return `${username}:{SHA256.b64}${hash}\n`;
    })
    .join('');
}

interface ConfigValues {
  dir: string;
  home: string;
  passdbFile: string;
  logFile: string;
  certFile: string;
  keyFile: string;
  imapPort: number;
  tlsPort: number;
  tls: boolean;
  loginDisabled: boolean;
  authFailureDelay: number;
  trustedNetworks: string;
  mailUid: number;
  mailGid: number;
}

/** The whole config: `-c` replaces /etc/dovecot, so nothing of the system's applies. */
function dovecotConfig(v: ConfigValues): string {
  if (/\s/.test(v.dir)) throw new Error(`Dovecot paths must not contain spaces: ${v.dir}`);
  return `# Generated by test/helpers/dovecot.ts
# Own base_dir, state_dir and instance_name: several instances run side by
# side, and none may touch the system's /run/dovecot or /var/lib/dovecot.
base_dir = ${v.dir}/run
state_dir = ${v.dir}/state
instance_name = clubhouse-test-${path.basename(v.dir)}
protocols = imap
listen = 127.0.0.1
log_path = ${v.logFile}

ssl = ${v.tls ? 'yes' : 'no'}
${v.tls ? `ssl_cert = <${v.certFile}\nssl_key = <${v.keyFile}` : ''}
disable_plaintext_auth = ${v.loginDisabled ? 'yes' : 'no'}
auth_mechanisms = plain login
auth_failure_delay = ${v.authFailureDelay} secs
${v.trustedNetworks === '' ? '' : `login_trusted_networks = ${v.trustedNetworks}`}

# The login (dovenull) and internal (dovecot) users are the package's
# defaults; mail processes run as the dovecot user, whose uid is below the
# default first_valid_uid of 500.
first_valid_uid = ${v.mailUid}
mail_location = maildir:~/Maildir
# Tests open many sessions per user from 127.0.0.1; the default of 10 would
# turn a successful LOGIN into a BYE.
mail_max_userip_connections = 1000

passdb {
  driver = passwd-file
  args = ${v.passdbFile}
}
userdb {
  driver = static
  args = uid=${v.mailUid} gid=${v.mailGid} home=${v.home}/%u
}

service imap-login {
  # The defaults (143, 993) must be overridden, or Dovecot binds them.
  inet_listener imap {
    port = ${v.imapPort}
  }
  inet_listener imaps {
    port = ${v.tlsPort}
    ssl = yes
  }
}

# Dovecot delays logins from an IP after failures (2 s doubling up to 15 s,
# tracked by anvil), on top of auth_failure_delay. Tests fail logins on
# purpose from 127.0.0.1 all the time; mode 0 removes the socket, which
# turns the penalty off.
service anvil {
  unix_listener anvil-auth-penalty {
    mode = 0
  }
}
`;
}

/** Resolves once `port` greets with `* OK`; rejects with Dovecot's log if Dovecot exits. */
async function waitForGreeting(port: number, server: ManagedChild, logFile: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const greeting = await readGreeting(port);
    if (greeting?.startsWith('* OK')) return;
    if (!server.running() || Date.now() > deadline) {
      const log = await readFile(logFile, 'utf8').catch(() => '');
      const why = server.running() ? `no greeting after ${START_TIMEOUT_MS} ms` : 'Dovecot exited';
      throw new Error(`${why}:\n${await server.finalOutput()}\n${log}`);
    }
    await sleep(50);
  }
}

function readGreeting(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (line: string | undefined): void => {
      socket.destroy();
      resolve(line);
    };
    socket.setTimeout(2000, () => done(undefined));
    readLines(socket, done);
    socket.once('error', () => done(undefined));
    socket.once('close', () => done(undefined));
  });
}

interface Relay {
  port: number;
  close(): Promise<void>;
}

/**
 * A TCP relay from 127.0.0.1:<free port> to Dovecot, connecting from
 * 127.0.0.2. Dovecot treats a connection whose remote IP equals its local IP
 * as secured ("localhost connections are always secured") and then never
 * advertises LOGINDISABLED; through the relay the peer looks remote.
 */
async function startRemoteLookingRelay(targetPort: number): Promise<Relay> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort, localAddress: '127.0.0.2' });
    track(client);
    track(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

// Dovecot 2.3 logs a successful login from the login process as
// "<date> imap-login: Info: Login: user=<alice>, method=PLAIN, rip=..., ..."
// (method=PLAIN also for the LOGIN command, which it maps onto SASL PLAIN).
const LOGIN_LINE = /^.* imap-login: Info: Login: user=<([^>]*)>/gm;

/**
 * Counts "Login:" lines. The log is written by Dovecot's log process, which
 * may lag the client's OK slightly, so the file is read until it is stable.
 */
async function countLogins(logFile: string, username?: string): Promise<number> {
  let previous = -1;
  for (let reads = 0; reads < 40; reads++) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    const count = [...log.matchAll(LOGIN_LINE)].filter(
      (m) => username === undefined || m[1] === username,
    ).length;
    if (count === previous) return count;
    previous = count;
    await sleep(100);
  }
  return previous;
}
