// Contract §5: the verify-only IMAP client (src/backends/imap/client.ts, lines.ts) against scripted
// servers: the exact bytes of AUTHENTICATE PLAIN and LOGIN, SASL-IR vs continuation, literals
// (synchronising, LITERAL+, LITERAL-), our own tags only, PREAUTH refused in every mode,
// capabilities re-read after STARTTLS, ID only after TLS, and the bounds of the response reader.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { probeImapServer, verifyImapLogin } from '../../src/backends/imap/client.ts';
import { loginSegments } from '../../src/backends/imap/commands.ts';
import { type ImapResponse, MAX_LINE_BYTES, ResponseReader } from '../../src/backends/imap/lines.ts';
import type { ImapSettings } from '../../src/backends/imap/settings.ts';
import { backendTls } from '../../src/backends/tls.ts';
import { makeTestCertificates, type TestCertificates } from '../helpers/certs.ts';
import { type HostileOptions, startHostileImap } from '../helpers/hostile-imap.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';

const UMA = 'pässwörd-日本語-✓';
const QUINN = 'a b "c" \'d\' \\e';

let dir: string;
let certs: TestCertificates;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'clubhouse-imap-client-'));
  certs = await makeTestCertificates(dir);
});
after(() => rmSync(dir, { recursive: true, force: true }));

function settings(
  port: number,
  security: ImapSettings['security'],
  extra: Partial<ImapSettings> = {},
): ImapSettings {
  return {
    host: security === 'plain' ? '127.0.0.1' : 'localhost',
    port,
    security,
    caFile: certs.caFile,
    timeoutMs: 2000,
    maxConcurrency: 4,
    queueLimit: 4,
    forwardClientIp: false,
    ...extra,
  };
}

/** One login against a hostile-imap server with `options`; returns the result and the server. */
async function loginTo(
  options: HostileOptions,
  security: ImapSettings['security'],
  password: string,
  extra: Partial<ImapSettings> = {},
) {
  const server = await startHostileImap({
    users: { alice: password },
    cert: certs,
    implicitTls: security === 'tls',
    ...options,
  });
  try {
    const s = settings(server.port, security, extra);
    const result = await verifyImapLogin(s, backendTls(s.host, s.caFile), 'alice', password, '203.0.113.9');
    await server.drained();
    return { result, received: server.received(), commands: server.commands.map((c) => c.split(' ')[1]) };
  } finally {
    await server.close();
  }
}

const plainResponse = (user: string, pass: string) =>
  Buffer.from(`\0${user}\0${pass}`, 'utf8').toString('base64');

describe('the login command on the wire', () => {
  test('AUTHENTICATE PLAIN with SASL-IR: one command, the exact bytes, then LOGOUT (1 round trip)', async () => {
    const { result, received } = await loginTo({}, 'tls', UMA);
    assert.deepEqual(result, { ok: true });
    assert.equal(received, `a1 AUTHENTICATE PLAIN ${plainResponse('alice', UMA)}\r\na2 LOGOUT\r\n`);
  });

  test('AUTHENTICATE PLAIN without SASL-IR: the response after the + continuation', async () => {
    const { result, received } = await loginTo({ caps: 'IMAP4rev1 AUTH=PLAIN' }, 'tls', UMA);
    assert.deepEqual(result, { ok: true });
    assert.equal(received, `a1 AUTHENTICATE PLAIN\r\n${plainResponse('alice', UMA)}\r\na2 LOGOUT\r\n`);
  });

  test('LOGIN with a synchronising literal for a non-ASCII password', async () => {
    const { result, received } = await loginTo({ caps: 'IMAP4rev1', strictQuoted: true }, 'plain', UMA);
    assert.deepEqual(result, { ok: true });
    const bytes = Buffer.byteLength(UMA);
    assert.equal(received, `a1 LOGIN "alice" {${bytes}}\r\n${UMA}\r\na2 LOGOUT\r\n`);
  });

  test('LOGIN with quoted-string specials escaped', async () => {
    const { result, received } = await loginTo({ caps: 'IMAP4rev1', strictQuoted: true }, 'plain', QUINN);
    assert.deepEqual(result, { ok: true });
    assert.equal(received, 'a1 LOGIN "alice" "a b \\"c\\" \'d\' \\\\e"\r\na2 LOGOUT\r\n');
  });

  test('LOGIN with LITERAL+: a non-synchronising literal, no continuation awaited', async () => {
    const { result, received } = await loginTo({ caps: 'IMAP4rev1 LITERAL+' }, 'plain', UMA);
    assert.deepEqual(result, { ok: true });
    assert.equal(received, `a1 LOGIN "alice" {${Buffer.byteLength(UMA)}+}\r\n${UMA}\r\na2 LOGOUT\r\n`);
  });

  test('LITERAL- allows non-synchronising literals up to 4096 bytes only (RFC 7888)', () => {
    const caps = new Set(['IMAP4REV1', 'LITERAL-']);
    assert.equal(loginSegments(caps, 'alice', 'ü'.repeat(2048)).length, 1);
    const long = loginSegments(caps, 'alice', 'ü'.repeat(2049));
    assert.equal(long.length, 2);
    assert.equal(long[0]?.toString(), 'LOGIN "alice" {4098}\r\n');
  });

  test('a non-ASCII username goes in a literal too', () => {
    const [first, second] = loginSegments(new Set(['IMAP4REV1']), 'jürgen', 'pw');
    assert.equal(first?.toString(), 'LOGIN {7}\r\n');
    assert.equal(second?.toString(), 'jürgen "pw"\r\n');
  });

  test('the literal is sent only after the server asks for it', async () => {
    const seen: string[] = [];
    const server: Server = createServer((socket: Socket) => {
      socket.on('error', () => undefined);
      socket.write('* OK [CAPABILITY IMAP4rev1] ready\r\n');
      socket.on('data', (chunk: Buffer) => {
        seen.push(chunk.toString('utf8'));
        const last = seen.at(-1) ?? '';
        if (last === 'a1 LOGIN "alice" {2}\r\n') {
          // A client that did not wait would send the bytes meanwhile.
          setTimeout(() => {
            seen.push('<+>');
            socket.write('+ go\r\n');
          }, 150);
        } else if (last === 'é\r\n') {
          socket.write('a1 OK done\r\n');
        } else if (last === 'a2 LOGOUT\r\n') {
          socket.end('* BYE\r\na2 OK bye\r\n');
        }
      });
    });
    server.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const s = settings((server.address() as { port: number }).port, 'plain');
      assert.deepEqual(await verifyImapLogin(s, backendTls(s.host, s.caFile), 'alice', 'é', '192.0.2.1'), {
        ok: true,
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(seen, ['a1 LOGIN "alice" {2}\r\n', '<+>', 'é\r\n', 'a2 LOGOUT\r\n']);
    } finally {
      server.close();
    }
  });
});

describe('what counts as a verified login (contract §5)', () => {
  for (const security of ['tls', 'starttls', 'plain'] as const) {
    test(`a PREAUTH greeting is refused (${security}), and nothing is sent`, async () => {
      const { result, received } = await loginTo({ trick: 'preauth' }, security, 'pw');
      assert.deepEqual(result, { ok: false, failure: 'upstream_misconfigured', reason: 'PREAUTH greeting' });
      assert.equal(received, '');
    });
  }

  test("another tag's OK is out of protocol", async () => {
    const { result } = await loginTo({ trick: 'foreign-tag' }, 'tls', 'pw');
    assert.deepEqual(result, {
      ok: false,
      failure: 'upstream_misconfigured',
      reason: 'a tagged answer to a command never sent',
    });
  });

  test('an untagged OK is not a verdict: the attempt ends at the deadline', async () => {
    // The server never sends a tagged answer, so only the deadline can end the attempt (a broken
    // deadline hangs to the test timeout), and the reason says it did; an untagged OK taken as a
    // verdict would be { ok: true }. Not before it: a 500 ms timer started first has fired.
    const reference = referenceTimer(500);
    const { result } = await loginTo({ trick: 'untagged-ok' }, 'tls', 'pw', { timeoutMs: 500 });
    reference.cancel();
    assert.ok(reference.fired, 'gave up before the deadline');
    assert.deepEqual(result, {
      ok: false,
      failure: 'upstream_unavailable',
      reason: 'no answer within 500 ms',
    });
  });

  test('tagged NO is bad_credentials with its code; NO [UNAVAILABLE] and BAD are not', async () => {
    assert.deepEqual((await loginTo({}, 'tls', 'pw', {})).result, { ok: true });
    const server = await startHostileImap({ users: { alice: 'right' }, cert: certs, implicitTls: true });
    try {
      const s = settings(server.port, 'tls');
      assert.deepEqual(
        await verifyImapLogin(s, backendTls(s.host, s.caFile), 'alice', 'wrong', '192.0.2.1'),
        {
          ok: false,
          failure: 'bad_credentials',
          reason: 'IMAP [AUTHENTICATIONFAILED]',
        },
      );
    } finally {
      await server.close();
    }
    assert.equal((await loginTo({ trick: 'unavailable' }, 'tls', 'pw')).result.ok, false);
    assert.deepEqual((await loginTo({ trick: 'unavailable' }, 'tls', 'pw')).result, {
      ok: false,
      failure: 'upstream_unavailable',
      reason: 'IMAP [UNAVAILABLE]',
    });
    assert.deepEqual((await loginTo({ trick: 'bad' }, 'tls', 'pw')).result, {
      ok: false,
      failure: 'upstream_misconfigured',
      reason: 'IMAP BAD',
    });
  });

  test('control characters never reach the wire', async () => {
    const s = settings(1, 'plain');
    for (const [username, password] of [
      ['alice', 'a\0b'],
      ['alice', 'a\r\nb1 LOGOUT'],
      ['al\nice', 'pw'],
    ]) {
      assert.deepEqual(
        await verifyImapLogin(s, backendTls(s.host, s.caFile), username ?? '', password ?? '', '192.0.2.1'),
        {
          ok: false,
          failure: 'rejected_input',
          reason: 'control character',
        },
      );
    }
  });
});

describe('STARTTLS and capabilities', () => {
  test('capabilities before STARTTLS are discarded: AUTH=PLAIN gone after TLS means LOGIN', async () => {
    const { result, commands } = await loginTo(
      { caps: 'IMAP4rev1 STARTTLS AUTH=PLAIN SASL-IR', tlsCaps: 'IMAP4rev1 LITERAL+' },
      'starttls',
      UMA,
    );
    assert.deepEqual(result, { ok: true });
    assert.deepEqual(commands, ['STARTTLS', 'CAPABILITY', 'LOGIN', 'LOGOUT']);
  });

  test('ID with x-originating-ip goes after TLS, only when asked for', async () => {
    const forward = await loginTo({}, 'starttls', 'pw', { forwardClientIp: true });
    assert.deepEqual(forward.result, { ok: true });
    assert.deepEqual(forward.commands, ['STARTTLS', 'CAPABILITY', 'ID', 'AUTHENTICATE', 'LOGOUT']);
    assert.match(forward.received, /a3 ID \("name" "clubhouse" "x-originating-ip" "203\.0\.113\.9"\)\r\n/);
    const quiet = await loginTo({}, 'starttls', 'pw');
    assert.deepEqual(quiet.commands, ['STARTTLS', 'CAPABILITY', 'AUTHENTICATE', 'LOGOUT']);
  });

  test('plaintext behind the STARTTLS OK is refused before TLS starts', async () => {
    const { result, commands } = await loginTo({ trick: 'starttls-injection' }, 'starttls', 'pw');
    assert.deepEqual(result, {
      ok: false,
      failure: 'upstream_misconfigured',
      reason: 'plaintext injected after STARTTLS',
    });
    assert.deepEqual(commands, ['STARTTLS']);
  });

  test('the probe: ok on a good server, LOGINDISABLED and PREAUTH are not', async () => {
    for (const [options, expected] of [
      [{}, { ok: true }],
      [
        { tlsCaps: 'IMAP4rev1 LOGINDISABLED' },
        { ok: false, reason: 'upstream_misconfigured: LOGINDISABLED' },
      ],
      [{ trick: 'preauth' }, { ok: false, reason: 'upstream_misconfigured: PREAUTH greeting' }],
    ] as const) {
      const server = await startHostileImap({ cert: certs, ...options });
      try {
        const s = settings(server.port, 'starttls');
        assert.deepEqual(await probeImapServer(s, backendTls(s.host, s.caFile)), expected);
        await server.drained();
      } finally {
        await server.close();
      }
    }
  });
});

/** Feeds `chunks` through a ResponseReader and collects responses until it fails or they run out. */
async function readAll(chunks: readonly Buffer[], count: number): Promise<(ImapResponse | string)[]> {
  const stream = new PassThrough();
  const reader = new ResponseReader();
  reader.attach(stream as unknown as Socket);
  for (const chunk of chunks) stream.write(chunk);
  const out: (ImapResponse | string)[] = [];
  for (let i = 0; i < count; i++) {
    try {
      out.push(await reader.next());
    } catch (err) {
      out.push((err as Error).message);
      break;
    }
  }
  return out;
}

describe('the response reader', () => {
  const stream = Buffer.from(
    '* OK [CAPABILITY IMAP4rev1] hi\r\n* 1 FETCH (BODY {5}\r\nab\r\nc)\r\n+ go\r\na1 OK done\r\n',
  );
  const expected: ImapResponse[] = [
    { kind: 'untagged', text: 'OK [CAPABILITY IMAP4rev1] hi' },
    { kind: 'untagged', text: '1 FETCH (BODY "")' },
    { kind: 'continuation', text: 'go' },
    { kind: 'tagged', tag: 'a1', text: 'OK done' },
  ];

  test('parses lines, skips a small literal, however the bytes are split (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }),
        async (cuts) => {
          const points = [0, ...cuts.sort((a, b) => a - b), stream.length];
          const chunks = points.slice(1).map((end, i) => stream.subarray(points[i], end));
          assert.deepEqual(await readAll(chunks, 4), expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  test(`a line of ${MAX_LINE_BYTES} bytes passes; one byte more is out of protocol`, async () => {
    const fits = `* OK ${'x'.repeat(MAX_LINE_BYTES - 5)}`;
    assert.equal(((await readAll([Buffer.from(`${fits}\r\n`)], 1))[0] as ImapResponse).kind, 'untagged');
    assert.deepEqual(await readAll([Buffer.from(`${fits}x`)], 1), [
      `a line longer than ${MAX_LINE_BYTES} bytes`,
    ]);
  });

  test('a huge literal, a flood, or a line that is no response are refused', async () => {
    assert.deepEqual(await readAll([Buffer.from('* OK {9999999}\r\n')], 1), ['a literal of 9999999 bytes']);
    assert.deepEqual(
      (await readAll([Buffer.from('* OK x\r\n'.repeat(300))], 300)).at(-1),
      'more than 256 responses unread',
    );
    assert.deepEqual(await readAll([Buffer.from('garbage\r\n')], 1), ['not an IMAP response: garbage']);
  });
});
