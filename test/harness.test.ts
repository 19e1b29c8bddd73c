// Proves the real-server harness is real: Dovecot authenticates over plain
// text, STARTTLS and implicit TLS with a CA the test verifies; PostgreSQL and
// Redis answer and can be stopped and restarted. IMAP is spoken raw here, so
// the harness is proven independently of the service's IMAP client.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { Redis } from 'ioredis';
import pg from 'pg';
import { type Dovecot, startDovecot, TEST_USERS, testUser } from './helpers/dovecot.ts';
import { CrlfBuffer } from './helpers/lines.ts';
import { canConnect } from './helpers/ports.ts';
import { startPostgres } from './helpers/postgres.ts';
import { startRedis } from './helpers/redis.ts';

const READ_TIMEOUT_MS = 15_000;

interface ImapReply {
  /** Untagged and continuation lines before the tagged one. */
  untagged: string[];
  /** The tagged line without its tag, e.g. `OK Logged in`. */
  status: string;
}

interface ImapSession {
  greeting: string;
  /** Sends one tagged command line and reads up to its tagged reply. */
  command(text: string): Promise<ImapReply>;
  /** LOGIN with synchronizing literals: `{n}`, wait for `+`, send the bytes. */
  loginWithLiterals(username: string, password: string): Promise<ImapReply>;
  /** AUTHENTICATE PLAIN via a continuation: base64 of `\0user\0password` in UTF-8. */
  authenticatePlain(username: string, password: string): Promise<ImapReply>;
  /** STARTTLS, then a TLS handshake that must verify against `ca` for `localhost`. */
  startTls(ca: string): Promise<void>;
  close(): void;
}

/** Reads CRLF-terminated lines from a socket; detach() hands the socket over (STARTTLS). */
function lineReader(socket: net.Socket) {
  const received = new CrlfBuffer();
  const lines: string[] = [];
  let waiter: ((line: string | Error) => void) | undefined;
  const deliver = (): void => {
    if (waiter && lines.length > 0) {
      const resolve = waiter;
      waiter = undefined;
      resolve(lines.shift() as string);
    }
  };
  const onData = (chunk: Buffer): void => {
    received.push(chunk);
    for (let line = received.line(); line !== null; line = received.line()) lines.push(line.toString('utf8'));
    deliver();
  };
  const onEnd = (): void => waiter?.(new Error('connection closed'));
  socket.on('data', onData);
  socket.on('close', onEnd);
  socket.on('error', (error) => waiter?.(error));
  return {
    next(): Promise<string> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('IMAP read timed out')), READ_TIMEOUT_MS);
        waiter = (line) => {
          clearTimeout(timer);
          if (line instanceof Error) reject(line);
          else resolve(line);
        };
        deliver();
      });
    },
    detach(): void {
      assert.equal(
        received.rest().toString('utf8') + lines.join(''),
        '',
        'no data may follow the STARTTLS reply',
      );
      socket.off('data', onData);
      socket.off('close', onEnd);
    },
  };
}

/** Connects (plain, or implicit TLS when `ca` is given) and reads the greeting. */
async function connectImap(port: number, options: { ca?: string } = {}): Promise<ImapSession> {
  let socket: net.Socket = options.ca
    ? tls.connect({ host: '127.0.0.1', port, ca: options.ca, servername: 'localhost' })
    : net.connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => {
    socket.once(options.ca ? 'secureConnect' : 'connect', () => resolve());
    socket.once('error', (error) => {
      socket.destroy();
      reject(error);
    });
  });
  let reader = lineReader(socket);
  let tagNumber = 0;
  const write = (text: string): void => {
    socket.write(Buffer.from(text, 'utf8'));
  };
  const readUntilTagged = async (tag: string, onContinuation?: () => void): Promise<ImapReply> => {
    const untagged: string[] = [];
    for (;;) {
      const line = await reader.next().catch((error: Error) => {
        // A server that says BYE and hangs up has answered; anything else is an error.
        const bye = untagged.find((candidate) => candidate.startsWith('* BYE'));
        if (bye) return `${tag} ${bye.slice(2)}`;
        throw error;
      });
      if (line.startsWith(`${tag} `)) return { untagged, status: line.slice(tag.length + 1) };
      untagged.push(line);
      if (line.startsWith('+') && onContinuation) onContinuation();
    }
  };
  const greeting = await reader.next().catch((error: Error) => {
    socket.destroy();
    throw error;
  });
  const command = (text: string): Promise<ImapReply> => {
    const tag = `t${++tagNumber}`;
    write(`${tag} ${text}\r\n`);
    return readUntilTagged(tag);
  };
  return {
    greeting,
    command,
    loginWithLiterals(username, password) {
      const tag = `t${++tagNumber}`;
      const parts = [username, password].map((text) => Buffer.from(text, 'utf8'));
      // Each continuation request releases the next literal.
      const pending = [
        Buffer.concat([parts[0] as Buffer, Buffer.from(` {${(parts[1] as Buffer).length}}\r\n`)]),
        Buffer.concat([parts[1] as Buffer, Buffer.from('\r\n')]),
      ];
      socket.write(`${tag} LOGIN {${(parts[0] as Buffer).length}}\r\n`);
      return readUntilTagged(tag, () => socket.write(pending.shift() as Buffer));
    },
    authenticatePlain(username, password) {
      const tag = `t${++tagNumber}`;
      const response = Buffer.from(`\0${username}\0${password}`, 'utf8').toString('base64');
      write(`${tag} AUTHENTICATE PLAIN\r\n`);
      return readUntilTagged(tag, () => write(`${response}\r\n`));
    },
    async startTls(ca) {
      const reply = await command('STARTTLS');
      assert.match(reply.status, /^OK/);
      reader.detach();
      const secure = tls.connect({ socket, ca, servername: 'localhost' });
      await new Promise<void>((resolve, reject) => {
        secure.once('secureConnect', () => resolve());
        secure.once('error', reject);
      });
      assert.equal(secure.authorized, true);
      socket = secure;
      reader = lineReader(secure);
    },
    close() {
      socket.destroy();
    },
  };
}

/** Completes a TLS handshake with the given options; rejects if verification fails. */
async function tlsHandshake(port: number, options: tls.ConnectionOptions): Promise<tls.TLSSocket> {
  const socket = tls.connect({ host: '127.0.0.1', port, ...options });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', () => resolve());
      socket.once('error', reject);
    });
    return socket;
  } catch (error) {
    socket.destroy();
    throw error;
  }
}

/** IMAP quoted string; only for passwords without `"` or `\`. */
function quoted(text: string): string {
  assert.doesNotMatch(text, /["\\\r\n]/);
  return `"${text}"`;
}

/** Logs in with LOGIN and quoted strings, then logs out; returns the LOGIN status. */
async function plainLogin(port: number, username: string, password: string): Promise<string> {
  const session = await connectImap(port);
  try {
    const reply = await session.command(`LOGIN ${quoted(username)} ${quoted(password)}`);
    if (reply.status.startsWith('OK')) await session.command('LOGOUT');
    return reply.status;
  } finally {
    session.close();
  }
}

function capabilities(reply: ImapReply): string[] {
  const line = reply.untagged.find((candidate) => candidate.startsWith('* CAPABILITY '));
  assert.ok(line, 'CAPABILITY reply');
  return line.split(' ').slice(2);
}

describe('Dovecot harness', () => {
  let dovecot: Dovecot;
  const alice = testUser('alice');
  before(async () => {
    dovecot = await startDovecot();
  });
  after(() => dovecot?.stop());

  test('greets and has a CA, a plain port and a TLS port', async () => {
    assert.equal(await dovecot.setting('auth_failure_delay'), '0', 'refusals are not delayed by default');
    assert.equal(dovecot.host, '127.0.0.1');
    assert.notEqual(dovecot.plainPort, dovecot.tlsPort);
    assert.match(dovecot.caPem, /BEGIN CERTIFICATE/);
    const session = await connectImap(dovecot.plainPort);
    session.close();
    assert.match(session.greeting, /^\* OK/);
  });

  test('LOGIN on the plain port: right password OK, wrong password NO', async () => {
    assert.match(await plainLogin(dovecot.plainPort, alice.username, alice.password), /^OK/);
    assert.match(await plainLogin(dovecot.plainPort, alice.username, 'wrong-password'), /^NO/);
    assert.match(await plainLogin(dovecot.plainPort, 'nobody-here', 'x'), /^NO/);
  });

  test('STARTTLS verifies with the harness CA, then LOGIN works', async () => {
    const session = await connectImap(dovecot.plainPort);
    try {
      assert.ok(capabilities(await session.command('CAPABILITY')).includes('STARTTLS'));
      await session.startTls(dovecot.caPem);
      const reply = await session.command(`LOGIN ${quoted(alice.username)} ${quoted(alice.password)}`);
      assert.match(reply.status, /^OK/);
      assert.match((await session.command('LOGOUT')).status, /^OK/);
    } finally {
      session.close();
    }
  });

  test('implicit TLS verifies with the harness CA, then LOGIN works', async () => {
    const session = await connectImap(dovecot.tlsPort, { ca: dovecot.caPem });
    try {
      assert.match(session.greeting, /^\* OK/);
      const reply = await session.command(`LOGIN ${quoted(alice.username)} ${quoted(alice.password)}`);
      assert.match(reply.status, /^OK/);
    } finally {
      session.close();
    }
  });

  test('TLS verification is real: unknown CA or wrong name is rejected', async () => {
    // The system trust store does not know the harness CA.
    await assert.rejects(
      tlsHandshake(dovecot.tlsPort, { servername: 'localhost' }),
      /self.signed|unable to verify/i,
    );
    // The certificate names localhost and 127.0.0.1, nothing else.
    await assert.rejects(
      tlsHandshake(dovecot.tlsPort, { ca: dovecot.caPem, servername: 'mail.example.com' }),
      /altnames|does not match/i,
    );
    const socket = await tlsHandshake(dovecot.tlsPort, { ca: dovecot.caPem, servername: 'localhost' });
    socket.destroy();
    // The CA file on disk is the same CA.
    assert.equal(await readFile(dovecot.caFile, 'utf8'), dovecot.caPem);
  });

  test('AUTHENTICATE PLAIN with a non-ASCII password', async () => {
    const uma = testUser('uma');
    assert.ok([...uma.password].some((char) => (char.codePointAt(0) ?? 0) > 0x7f));
    const session = await connectImap(dovecot.plainPort);
    try {
      assert.match((await session.authenticatePlain(uma.username, uma.password)).status, /^OK/);
    } finally {
      session.close();
    }
    const wrong = await connectImap(dovecot.plainPort);
    try {
      // Same characters in NFD form: the hash must match the exact UTF-8 bytes.
      const status = (await wrong.authenticatePlain(uma.username, uma.password.normalize('NFD'))).status;
      assert.match(status, /^NO/);
    } finally {
      wrong.close();
    }
  });

  test('LOGIN with literals for quotes, backslash, % and $, and non-ASCII', async () => {
    assert.ok(testUser('quinn').password.includes('\\'));
    for (const name of ['quinn', 'percy', 'uma']) {
      const user = testUser(name);
      const session = await connectImap(dovecot.plainPort);
      try {
        const reply = await session.loginWithLiterals(user.username, user.password);
        assert.match(reply.status, /^OK/, `${name}: ${reply.status}`);
      } finally {
        session.close();
      }
    }
    // Without its backslash, quinn's password is wrong: nothing was unescaped on the way.
    const session = await connectImap(dovecot.plainPort);
    try {
      const reply = await session.loginWithLiterals('quinn', testUser('quinn').password.replace('\\', ''));
      assert.match(reply.status, /^NO/);
    } finally {
      session.close();
    }
  });

  test('a 1024-character password: AUTHENTICATE PLAIN works, LOGIN cannot carry it', async () => {
    const long = testUser('long');
    assert.equal(long.password.length, 1024);
    assert.ok(Buffer.byteLength(long.password) > 1024);
    const viaSasl = await connectImap(dovecot.plainPort);
    try {
      assert.match((await viaSasl.authenticatePlain(long.username, long.password)).status, /^OK/);
    } finally {
      viaSasl.close();
    }
    // Dovecot 2.3 reads pre-login commands into a 1 KiB buffer: a literal
    // over ~1 KiB gets `* BYE Input buffer full, aborting` and a hang-up.
    // A client must use AUTHENTICATE PLAIN for such passwords.
    const viaLogin = await connectImap(dovecot.plainPort);
    try {
      const outcome = await viaLogin.loginWithLiterals(long.username, long.password).then(
        (reply) => reply.status,
        (error: Error) => `error: ${error.message}`,
      );
      assert.doesNotMatch(outcome, /^OK/);
    } finally {
      viaLogin.close();
    }
  });

  test('the numbered users exist', async () => {
    assert.equal(TEST_USERS.filter((user) => /^user\d{3}$/.test(user.username)).length, 100);
    assert.match(await plainLogin(dovecot.plainPort, 'user000', 'password-000'), /^OK/);
    assert.match(await plainLogin(dovecot.plainPort, 'user099', 'password-099'), /^OK/);
    assert.match(await plainLogin(dovecot.plainPort, 'user099', 'password-098'), /^NO/);
  });

  test('loginCount counts successful logins only, per user', async () => {
    const aliceBefore = await dovecot.loginCount('alice');
    const bobBefore = await dovecot.loginCount('bob');
    const allBefore = await dovecot.loginCount();
    assert.ok(aliceBefore >= 1, 'earlier tests logged alice in');
    assert.match(await plainLogin(dovecot.plainPort, alice.username, alice.password), /^OK/);
    assert.match(await plainLogin(dovecot.plainPort, alice.username, alice.password), /^OK/);
    assert.match(await plainLogin(dovecot.plainPort, alice.username, 'wrong'), /^NO/);
    assert.equal(await dovecot.loginCount('alice'), aliceBefore + 2);
    assert.equal(await dovecot.loginCount('bob'), bobBefore);
    assert.equal(await dovecot.loginCount(), allBefore + 2);
  });
});

describe('Dovecot variants', () => {
  test('tls:false offers no STARTTLS and no TLS port; LOGIN still works', async (t) => {
    const dovecot = await startDovecot({ tls: false, users: [testUser('bob')] });
    t.after(() => dovecot.stop());
    assert.equal(dovecot.tlsPort, 0);
    const session = await connectImap(dovecot.plainPort);
    try {
      assert.ok(!capabilities(await session.command('CAPABILITY')).includes('STARTTLS'));
    } finally {
      session.close();
    }
    assert.match(await plainLogin(dovecot.plainPort, 'bob', 'bob-password'), /^OK/);
    // `users` replaced TEST_USERS.
    assert.match(await plainLogin(dovecot.plainPort, 'alice', 'alice-password'), /^NO/);
  });

  test('loginDisabled advertises LOGINDISABLED until STARTTLS', async (t) => {
    const dovecot = await startDovecot({ loginDisabled: true });
    t.after(() => dovecot.stop());
    const session = await connectImap(dovecot.plainPort);
    try {
      assert.ok(capabilities(await session.command('CAPABILITY')).includes('LOGINDISABLED'));
      assert.doesNotMatch((await session.command('LOGIN "carol" "carol-password"')).status, /^OK/);
      await session.startTls(dovecot.caPem);
      assert.ok(!capabilities(await session.command('CAPABILITY')).includes('LOGINDISABLED'));
      assert.match((await session.command('LOGIN "carol" "carol-password"')).status, /^OK/);
    } finally {
      session.close();
    }
    const secure = await connectImap(dovecot.tlsPort, { ca: dovecot.caPem });
    try {
      assert.match((await secure.command('LOGIN "carol" "carol-password"')).status, /^OK/);
    } finally {
      secure.close();
    }
  });

  // The delay itself is Dovecot's (auth_failure_delay); the harness's part is to hand it the option.
  // So this reads the setting back as Dovecot parses this instance's config, not a stopwatch.
  test('authFailureDelay reaches Dovecot as its auth_failure_delay', async (t) => {
    const dovecot = await startDovecot({ authFailureDelay: 2 });
    t.after(() => dovecot.stop());
    // Dovecot's own default is 2 secs too; that the default instance has 0 shows the option is ours.
    assert.equal(await dovecot.setting('auth_failure_delay'), '2 secs');
    assert.match(await plainLogin(dovecot.plainPort, 'dave', 'not-daves-password'), /^NO/);
    assert.match(await plainLogin(dovecot.plainPort, 'dave', 'dave-password'), /^OK/);
  });
});

/** Runs one query on a fresh connection; connection errors reject. */
async function queryOnce(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.query(sql);
  } finally {
    await client.end().catch(() => {});
  }
}

describe('PostgreSQL harness', () => {
  test('createDatabase gives a working database; drop removes it', async (t) => {
    const postgres = await startPostgres();
    t.after(() => postgres.stop());
    const db = await postgres.createDatabase();
    assert.match(db.name, /^clubhouse_test_[0-9a-f]+$/);
    const result = await queryOnce(db.url, 'select 1 as one, current_database() as name');
    assert.deepEqual(result.rows, [{ one: 1, name: db.name }]);
    await db.drop();
    await assert.rejects(queryOnce(db.url, 'select 1'), /does not exist/);
  });

  test('a private instance can be stopped and started again', async (t) => {
    const postgres = await startPostgres({ private: true });
    t.after(() => postgres.stop());
    assert.equal(postgres.private, true);
    assert.ok(postgres.stopServer && postgres.startServer);
    const db = await postgres.createDatabase();
    await queryOnce(db.url, 'create table t (n int); insert into t values (42)');
    await postgres.stopServer();
    assert.equal(await canConnect(Number(new URL(db.url).port)), false);
    await assert.rejects(queryOnce(db.url, 'select 1'), /ECONNREFUSED/);
    await postgres.startServer();
    assert.deepEqual((await queryOnce(db.url, 'select n from t')).rows, [{ n: 42 }]);
  });
});

describe('Redis harness', () => {
  test('PING, and set/get under a unique prefix that stop() cleans up', async (t) => {
    const redis = await startRedis();
    t.after(() => redis.stop());
    const client = new Redis(redis.url, { lazyConnect: true });
    t.after(() => client.disconnect());
    await client.connect();
    assert.equal(await client.ping(), 'PONG');
    const prefix = redis.keyPrefix();
    assert.notEqual(redis.keyPrefix(), prefix);
    await client.set(`${prefix}greeting`, 'hello');
    assert.equal(await client.get(`${prefix}greeting`), 'hello');
    await redis.stop();
    assert.equal(await client.exists(`${prefix}greeting`), 0);
  });

  test('a private instance can be stopped and started again', async (t) => {
    const redis = await startRedis({ private: true });
    t.after(() => redis.stop());
    assert.equal(redis.private, true);
    assert.ok(redis.stopServer && redis.startServer);
    const ping = async (): Promise<string> => {
      const client = new Redis(redis.url, {
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      });
      client.on('error', () => {});
      try {
        await client.connect();
        return await client.ping();
      } finally {
        client.disconnect();
      }
    };
    assert.equal(await ping(), 'PONG');
    await redis.stopServer();
    assert.equal(await canConnect(Number(new URL(redis.url).port)), false);
    await assert.rejects(ping());
    await redis.startServer();
    assert.equal(await ping(), 'PONG');
  });
});
