// Contract §6 outside /api: /healthz, /readyz (stores and IMAP, probed without credentials and
// cached), /metrics (Prometheus text), METRICS_PORT.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { StoreUnavailableError } from '../../src/store/errors.ts';
import { dovecotEnv, fakeAuthenticator, loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { type Dovecot, startDovecot } from '../helpers/dovecot.ts';
import { startFakeImap } from '../helpers/fake-imap.ts';
import { freePort } from '../helpers/ports.ts';

// /readyz also says how each store is reached (docs/operations.md); this suite runs on a SQLite file.
const LOCAL = { database: 'local', sessions: 'local' };

/** The value of one sample line of a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(\{(.*)\})? (.+)$/.exec(line);
    if (match?.[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[3] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[4]);
  }
  return undefined;
}

describe('/readyz against a real Dovecot', () => {
  let dovecot: Dovecot;
  let t: TestApp;
  before(async () => {
    dovecot = await startDovecot();
    t = await startTestApp({ dovecot });
  });
  after(async () => {
    await t.close();
    await dovecot.stop();
  });

  test('answers 200 when the stores and IMAP answer, without logging in to IMAP', async () => {
    const before = await dovecot.loginCount();
    const response = await t.fastify.inject({ url: '/readyz' });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { status: 'ready', checks: { stores: 'ok', imap: 'ok' }, tls: LOCAL });
    assert.equal(response.headers['x-frame-options'], 'SAMEORIGIN');
    assert.equal(await dovecot.loginCount(), before);
  });

  test('probes over STARTTLS too', async () => {
    const s = await startTestApp({ dovecot, env: dovecotEnv(dovecot, 'starttls') });
    try {
      const response = await s.fastify.inject({ url: '/readyz' });
      assert.deepEqual(response.json(), {
        status: 'ready',
        checks: { stores: 'ok', imap: 'ok' },
        tls: LOCAL,
      });
    } finally {
      await s.close();
    }
  });

  test('a certificate that does not verify makes it 503, naming imap', async () => {
    const s = await startTestApp({ dovecot, env: { IMAP_CA_FILE: '' } });
    try {
      const response = await s.fastify.inject({ url: '/readyz' });
      assert.equal(response.statusCode, 503);
      const body = response.json();
      assert.deepEqual(body.failing, ['imap']);
      assert.match(body.checks.imap, /^upstream_misconfigured: TLS/);
      assert.equal(response.headers['retry-after'], '5');
    } finally {
      await s.close();
    }
  });

  test('a store that cannot answer makes it 503, naming the store', async () => {
    const original = t.stores.ping;
    t.stores.ping = () => Promise.reject(new StoreUnavailableError('sessions'));
    try {
      const response = await t.fastify.inject({ url: '/readyz' });
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json(), {
        status: 'unavailable',
        failing: ['stores'],
        checks: { stores: 'sessions unavailable', imap: 'ok' },
        tls: LOCAL,
      });
    } finally {
      t.stores.ping = original;
    }
  });
});

describe('/readyz against servers that fail', () => {
  test('IMAP down: 503 naming imap', async () => {
    const port = await freePort();
    const t = await startTestApp({
      env: { IMAP_HOST: '127.0.0.1', IMAP_PORT: String(port), IMAP_SECURITY: 'plain' },
    });
    try {
      const response = await t.fastify.inject({ url: '/readyz' });
      assert.equal(response.statusCode, 503);
      assert.deepEqual(response.json().failing, ['imap']);
      assert.match(response.json().checks.imap, /^upstream_unavailable: ECONNREFUSED/);
    } finally {
      await t.close();
    }
  });

  test('LOGINDISABLED: 503 naming imap', async () => {
    const dovecot = await startDovecot({ loginDisabled: true });
    const t = await startTestApp({
      dovecot,
      env: { ...dovecotEnv(dovecot, 'plain'), IMAP_HOST: '127.0.0.1' },
    });
    try {
      const response = await t.fastify.inject({ url: '/readyz' });
      assert.equal(response.statusCode, 503);
      assert.equal(response.json().checks.imap, 'upstream_misconfigured: LOGINDISABLED');
    } finally {
      await t.close();
      await dovecot.stop();
    }
  });

  test('STARTTLS required but not offered: 503', async () => {
    const server = await startFakeImap('no-starttls');
    const t = await startTestApp({
      env: { IMAP_HOST: '127.0.0.1', IMAP_PORT: String(server.port), IMAP_SECURITY: 'starttls' },
    });
    try {
      const response = await t.fastify.inject({ url: '/readyz' });
      assert.equal(response.json().checks.imap, 'upstream_misconfigured: STARTTLS not offered');
    } finally {
      await t.close();
      await server.close();
    }
  });

  test('20 probes in 2 s open at most a handful of IMAP connections', async () => {
    const server = await startFakeImap('record');
    const t = await startTestApp({
      env: { IMAP_HOST: '127.0.0.1', IMAP_PORT: String(server.port), IMAP_SECURITY: 'plain' },
    });
    try {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => t.fastify.inject({ url: '/readyz' })),
      );
      for (let i = 0; i < 10; i++) answers.push(await t.fastify.inject({ url: '/readyz' }));
      assert.ok(answers.every((a) => a.statusCode === 200));
      assert.ok(server.accepted <= 2, `${server.accepted} connections`);
      assert.ok(!/LOGIN|AUTHENTICATE/i.test(server.received.join('')), 'the probe never logs in');
      await server.drained();
    } finally {
      await t.close();
      await server.close();
    }
  });
});

describe('/metrics', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      authenticator: fakeAuthenticator({ alice: 'pw' }),
      env: { THROTTLE_USER_FAILURES: '2' },
    });
  });
  after(() => t.close());

  test('counts requests by route and status, logins by outcome and class, and live sessions', async () => {
    await t.fastify.inject({ url: '/api/auth/check' });
    await t.fastify.inject({ url: '/api/auth/check' });
    await t.fastify.inject({ url: '/api/group/42' });
    await t.fastify.inject({ url: '/nowhere' });
    const ok = await loginAs(t.fastify, 'alice', 'pw');
    // bob, not alice: this address has logged in as alice, so alice's lock would not hold it back.
    await loginAs(t.fastify, 'bob', 'wrong-1');
    await loginAs(t.fastify, 'bob', 'wrong-2');
    await loginAs(t.fastify, 'bob', 'wrong-3');
    const response = await t.fastify.inject({ url: '/metrics' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const text = response.body;
    assert.equal(
      sample(text, 'clubhouse_http_requests_total', {
        method: 'GET',
        route: '/api/auth/check',
        status: '403',
      }),
      2,
    );
    assert.equal(
      sample(text, 'clubhouse_http_requests_total', {
        method: 'GET',
        route: '/api/group/:id',
        status: '403',
      }),
      1,
    );
    assert.equal(
      sample(text, 'clubhouse_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
      1,
    );
    assert.equal(
      sample(text, 'clubhouse_http_requests_total', {
        method: 'POST',
        route: '/api/auth/login',
        status: '429',
      }),
      1,
    );
    assert.equal(
      sample(text, 'clubhouse_http_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/auth/login',
        status: '403',
      }),
      2,
    );
    assert.equal(sample(text, 'clubhouse_login_attempts_total', { outcome: 'success', failure: '' }), 1);
    assert.equal(
      sample(text, 'clubhouse_login_attempts_total', { outcome: 'failure', failure: 'bad_credentials' }),
      2,
    );
    assert.equal(sample(text, 'clubhouse_login_attempts_total', { outcome: 'throttled', failure: '' }), 1);
    assert.equal(sample(text, 'clubhouse_login_throttled_total'), 1);
    assert.equal(sample(text, 'clubhouse_sessions_active'), 1);
    assert.equal(sample(text, 'clubhouse_imap_in_flight'), 0);
    assert.equal(sample(text, 'clubhouse_imap_queue_length'), 0);
    assert.equal(sample(text, 'clubhouse_imap_circuit_state'), 0);
    assert.ok((sample(text, 'process_resident_memory_bytes') ?? 0) > 0, 'process metrics');
    assert.ok(!text.includes(ok.sessionid));
  });
});

describe('the running server', () => {
  let dovecot: Dovecot;
  let server: RunningServer;
  before(async () => {
    dovecot = await startDovecot();
    const config = loadConfig({
      ...dovecotEnv(dovecot),
      PORT: '0',
      METRICS_PORT: String(await freePort()),
      DATABASE_URL: `sqlite:${process.env['TMPDIR'] ?? '/tmp'}/clubhouse-ops-${process.pid}.db`,
      LOG_LEVEL: 'silent',
    });
    server = await startServer(config, createLogger('silent'));
  });
  after(async () => {
    await server.close();
    await dovecot.stop();
  });

  test('METRICS_PORT serves /metrics apart, with IMAP login latency; the main port does not', async () => {
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'alice', password: 'alice-password' }),
    });
    assert.equal(login.status, 200);
    assert.equal((await fetch(`${server.url}/metrics`)).status, 404);
    assert.ok(server.metricsUrl !== null);
    const text = await (await fetch(server.metricsUrl)).text();
    assert.equal(sample(text, 'clubhouse_imap_login_duration_seconds_count', { result: 'ok' }), 1);
    assert.equal(
      sample(text, 'clubhouse_http_requests_total', {
        method: 'POST',
        route: '/api/auth/login',
        status: '200',
      }),
      1,
    );
  });

  test('/healthz answers 200 over a real socket', async () => {
    const response = await fetch(`${server.url}/healthz`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('x-frame-options'), 'SAMEORIGIN');
    assert.deepEqual(await response.json(), { status: 'ok' });
  });
});
