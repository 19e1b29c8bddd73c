// Hostile input (docs/reliability.md). A seeded, reproducible run of 20 000+ odd requests (methods,
// paths, percent-encodings, headers, cookies, bodies, deep and huge JSON, wrong types, NULs, invalid
// UTF-8) must never get a 5xx or crash the process, and memory must come back afterwards. Part of it
// goes over real sockets, byte for byte, so the HTTP parser and the client-error path are exercised
// too.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';

const SEED = Number(process.env['FUZZ_SEED'] ?? 20261121);
const INJECTED = 20_000;
const RAW = 1_500;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'PROPFIND',
  'TRACE',
  'SEARCH',
] as const;
const PATHS = [
  '/api/auth/check',
  '/api/auth/login',
  '/api/auth/logout',
  '/api/group/',
  '/api/group/1',
  '/api/group/007',
  '/api/schema',
  '/healthz',
  '/readyz',
  '/metrics',
  '/',
  '/group/1',
];

const oddText = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '%',
    '%zz',
    '%00',
    '%ff%fe',
    '..%2f..%2f',
    '\u0000',
    '\ud800',
    '😀',
    '%E2%82',
    ';',
    '\\',
    '//',
    '?a=1&a=2',
    '#frag',
  ),
);

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 10 }), tie('value'), { maxKeys: 4 }),
  ),
})).value;

const body = fc.oneof(
  jsonValue.map((v) => ({ type: 'application/json', payload: JSON.stringify(v) ?? 'null' })),
  fc
    .record({ username: jsonValue, password: jsonValue })
    .map((v) => ({ type: 'application/json', payload: JSON.stringify(v) })),
  fc
    .record({ username: oddText, password: oddText })
    .map((v) => ({ type: 'application/json', payload: JSON.stringify(v) })),
  fc
    .uint8Array({ maxLength: 200 })
    .map((bytes) => ({ type: 'application/json', payload: Buffer.from(bytes) })),
  fc.string({ maxLength: 200 }).map((s) => ({ type: 'application/x-www-form-urlencoded', payload: s })),
  fc.constantFrom(
    { type: 'application/json', payload: `${'['.repeat(5000)}${']'.repeat(5000)}` },
    { type: 'application/json', payload: `{"username": "${'a'.repeat(60_000)}", "password": "x"}` },
    { type: 'application/json', payload: `{"username": "alice", "password": "${'é'.repeat(40_000)}"}` },
    { type: 'application/json', payload: '{"__proto__": {"admin": true}, "username": "a", "password": "b"}' },
    { type: 'application/json', payload: '{"constructor": {"prototype": {"x": 1}}}' },
    { type: 'application/json', payload: '{"username": "a\\u0000b", "password": "c"}' },
    { type: 'text/plain', payload: 'username=alice' },
    { type: 'application/json; charset=latin1', payload: '{}' },
    { type: 'multipart/form-data; boundary=x', payload: '--x--' },
    { type: '', payload: '{}' },
  ),
  fc.constant(undefined),
);

const request = fc.record({
  method: fc.constantFrom(...METHODS),
  path: fc.oneof(
    fc.constantFrom(...PATHS),
    fc.tuple(fc.constantFrom(...PATHS), oddText).map(([p, s]) => p + escapeForUrl(s).slice(0, 60)),
  ),
  cookie: fc.option(
    fc.oneof(
      oddText.map((s) => `sessionid=${s}`),
      oddText,
      fc.constant('sessionid=a; sessionid=b; csrftoken=c'),
    ),
    { nil: undefined },
  ),
  csrf: fc.option(oddText, { nil: undefined }),
  origin: fc.option(fc.constantFrom('null', 'https://evil.example', 'http://localhost:80', 'x'), {
    nil: undefined,
  }),
  requestId: fc.option(oddText, { nil: undefined }),
  body,
});

/** Percent-encodes what a URL cannot carry as is (a lone surrogate is kept as its UTF-16 bytes). */
function escapeForUrl(text: string): string {
  try {
    return encodeURI(text);
  } catch {
    return [...Buffer.from(text, 'utf16le')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  }
}

/** Header values must be sendable by light-my-request; drop what Node itself would refuse. */
function headerSafe(value: string | undefined): string | undefined {
  return value !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(value) ? value : undefined;
}

describe('hostile input', () => {
  let t: TestApp;
  let validCookie: string;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { LOG_LEVEL: 'silent' },
    });
    validCookie = (await loginAs(t.fastify, 'alice', 'pw')).cookie;
  });
  after(() => t.close());

  test(`${INJECTED} seeded random requests through inject: no 5xx, every answer JSON or the web client`, async () => {
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const samples = fc.sample(request, { numRuns: INJECTED, seed: SEED });
    const statuses = new Map<number, number>();
    for (const [index, r] of samples.entries()) {
      const headers: Record<string, string> = {};
      const cookie = index % 7 === 0 ? validCookie : headerSafe(r.cookie);
      if (cookie !== undefined) headers['cookie'] = cookie;
      const csrf = headerSafe(r.csrf);
      if (csrf !== undefined) headers['x-csrftoken'] = csrf;
      if (r.origin !== undefined) headers['origin'] = r.origin;
      const id = headerSafe(r.requestId);
      if (id !== undefined) headers['x-request-id'] = id;
      if (r.body !== undefined && r.body.type !== '') headers['content-type'] = r.body.type;
      const response = await t.fastify.inject({
        method: r.method,
        url: r.path,
        headers,
        payload:
          r.method === 'GET' || r.method === 'HEAD' || r.body === undefined ? undefined : r.body.payload,
      });
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      // /readyz rightly says 503 here: this app's IMAP server is not reachable.
      const expected503 = r.path.startsWith('/readyz') && response.statusCode === 503;
      assert.ok(
        response.statusCode < 500 || expected503,
        `request #${index} (seed ${SEED}) ${r.method} ${r.path} → ${response.statusCode} ${response.body.slice(0, 200)}`,
      );
      assert.equal(response.headers['x-frame-options'], 'SAMEORIGIN');
    }
    // The run covers the interesting answers, not just one.
    for (const status of [200, 400, 403, 404, 405, 413, 415])
      assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} seen`);
    // The service still works (the fuzz itself logged the valid session out now and then).
    validCookie = (await loginAs(t.fastify, 'alice', 'pw')).cookie;
    const check = await t.fastify.inject({ url: '/api/auth/check', headers: { cookie: validCookie } });
    assert.equal(check.body, '"alice"');
    gc();
    const grown = process.memoryUsage().heapUsed - heapBefore;
    assert.ok(grown < 30 * 1024 * 1024, `heap grew by ${(grown / 1048576).toFixed(1)} MiB`);
  });

  test(`${RAW} raw byte-level requests over real sockets: a status line, never a 5xx, never a hang`, async () => {
    const address = await t.fastify.listen({ port: 0, host: '127.0.0.1' });
    const port = Number(new URL(address).port);
    const raw = fc.sample(
      fc.oneof(
        fc
          .tuple(fc.constantFrom(...METHODS), fc.uint8Array({ minLength: 1, maxLength: 80 }))
          .map(([m, bytes]) =>
            Buffer.concat([
              Buffer.from(`${m} /api/`),
              Buffer.from(bytes),
              Buffer.from(' HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
            ]),
          ),
        fc
          .uint8Array({ minLength: 1, maxLength: 100 })
          .map((bytes) =>
            Buffer.concat([
              Buffer.from('GET /api/auth/check HTTP/1.1\r\nhost: x\r\ncookie: sessionid='),
              Buffer.from(bytes),
              Buffer.from('\r\nconnection: close\r\n\r\n'),
            ]),
          ),
        fc
          .uint8Array({ minLength: 1, maxLength: 300 })
          .map((bytes) =>
            Buffer.concat([
              Buffer.from(
                `POST /api/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${bytes.length}\r\nconnection: close\r\n\r\n`,
              ),
              Buffer.from(bytes),
            ]),
          ),
        fc.constantFrom(
          Buffer.from(
            `GET /api/auth/check HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\nconnection: close\r\n\r\n`,
          ),
          Buffer.from(
            'GET /api/auth/check HTTP/1.1\r\nhost: x\r\ncookie: a=1\r\ncookie: sessionid=2\r\nconnection: close\r\n\r\n',
          ),
          Buffer.from('GET /api/auth/check HTTP/1.1\r\nhost: x\r\nhost: y\r\nconnection: close\r\n\r\n'),
          Buffer.from(
            'POST /api/auth/login HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n0\r\n\r\n',
          ),
          Buffer.from('GARBAGE\r\n\r\n'),
          Buffer.from('GET /api/auth/check HTTP/9.9\r\nhost: x\r\nconnection: close\r\n\r\n'),
          Buffer.from(
            'POST /api/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 999999\r\nconnection: close\r\n\r\n{}',
          ),
          Buffer.from([
            0x47, 0x45, 0x54, 0x20, 0x2f, 0xff, 0xfe, 0x20, 0x48, 0x54, 0x54, 0x50, 0x2f, 0x31, 0x2e, 0x31,
            0x0d, 0x0a, 0x0d, 0x0a,
          ]),
        ),
      ),
      { numRuns: RAW, seed: SEED },
    );
    const exchange = (bytes: Buffer) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let received = '';
        socket.setTimeout(5000, () => {
          socket.destroy();
          // Only a declared body that never comes may wait (requestTimeout ends it server-side).
          resolve(received === '' ? 'TIMEOUT' : received);
        });
        socket.on('data', (chunk) => {
          received += chunk.toString('latin1');
        });
        socket.on('error', (err: NodeJS.ErrnoException) =>
          err.code === 'ECONNRESET' ? resolve(received) : reject(err),
        );
        socket.on('end', () => resolve(received));
        socket.end(bytes);
      });
    let answered = 0;
    for (const [index, bytes] of raw.entries()) {
      const reply = await exchange(bytes);
      if (reply === 'TIMEOUT' || reply === '') continue;
      answered++;
      const status = /^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1];
      assert.ok(status !== undefined, `#${index}: not an HTTP answer: ${JSON.stringify(reply.slice(0, 80))}`);
      assert.ok(Number(status) < 500, `#${index}: ${reply.slice(0, 200)}`);
      assert.match(reply, /x-frame-options: SAMEORIGIN/i, `#${index}`);
    }
    assert.ok(answered > RAW * 0.9, `${answered} of ${RAW} answered`);
    const check = await fetch(`http://127.0.0.1:${port}/api/auth/check`, {
      headers: { cookie: validCookie },
    });
    assert.equal(await check.text(), '"alice"');
  });
});
