// The endpoint declaration (src/http/endpoints.ts, contract §1 and §7) for every method it can
// declare, PUT and PATCH included (no endpoint of today's API uses them; the next ones will): Allow
// lists exactly the declared methods, OPTIONS describes them and answers a trusted preflight, every
// other method is a 405, and every unsafe method (POST, PUT, PATCH, DELETE) passes the CSRF check
// before its body is read. On an edge of its own, with test endpoints only.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createEdge } from '../../src/http/edge.ts';
import { csrfGuard } from '../../src/http/route-helpers.ts';
import { createLogger } from '../../src/logger.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { answerWindows, freshnessGate } from '../../src/store/freshness/gate.ts';

const ALL = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';
const TRUSTED = 'https://app.example.org';
const SCHEMA = { response: {} };

let fastify: FastifyInstance;
/** The method and parsed body of every request that reached a handler, in order. */
const handled: { method: string; id: string; body: unknown }[] = [];

before(async () => {
  const edge = await createEdge({
    logger: createLogger('silent'),
    metrics: createMetrics(),
    trustedOrigins: [TRUSTED],
    allowedHosts: null,
    trustProxy: false,
    accessLog: false,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    keepAliveTimeoutMs: 72_000,
    freshness: freshnessGate({}, answerWindows()),
  });
  fastify = edge.fastify;
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const { id } = request.params as { id: string };
    handled.push({ method: request.method, id, body: request.body ?? null });
    return reply.code(200).send({ method: request.method, id });
  };
  edge.endpoint(
    { url: '/api/test/things/:id', name: 'Thing', beforeBody: csrfGuard([TRUSTED]) },
    (routes) => {
      routes.get({ schema: SCHEMA }, handler);
      routes.post({ schema: SCHEMA }, handler);
      routes.put({ schema: SCHEMA }, handler);
      routes.patch({ schema: SCHEMA }, handler);
      routes.delete({ schema: SCHEMA }, handler);
    },
  );
  edge.endpoint(
    { url: '/api/test/patch-only/:id', name: 'Patch Only', beforeBody: csrfGuard([]) },
    (routes) => routes.patch({ schema: SCHEMA }, handler),
  );
  edge.endpoint({ url: '/api/test/put-and-get/:id', name: 'Put And Get' }, (routes) => {
    routes.put({ schema: SCHEMA }, handler);
    routes.get({ schema: SCHEMA }, handler);
  });
  await fastify.ready();
});
after(() => fastify.close());

describe('an endpoint declaring every method', () => {
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'] as const) {
    test(`${method} reaches its own handler with its JSON body, Allow listing every method`, async () => {
      handled.length = 0;
      const response = await fastify.inject({
        method,
        url: '/api/test/things/7',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'seven' }),
      });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['allow'], ALL);
      assert.deepEqual(response.json(), { method, id: '7' });
      assert.deepEqual(handled, [{ method, id: '7', body: { name: 'seven' } }]);
    });

    test(`${method} from another origin is refused by the CSRF check before its body is read`, async () => {
      handled.length = 0;
      const response = await fastify.inject({
        method,
        url: '/api/test/things/7',
        // A body that does not parse: had it been read, the answer would be a 400.
        headers: { 'content-type': 'application/json', origin: 'https://evil.example', host: 'localhost' },
        payload: '{',
      });
      assert.equal(response.statusCode, 403);
      assert.equal(response.headers['allow'], ALL);
      assert.deepEqual(response.json(), { detail: 'CSRF Failed: Origin checking failed.' });
      assert.deepEqual(handled, []);
    });

    test(`${method} with an X-CSRFToken that is not the cookie's is refused`, async () => {
      handled.length = 0;
      const response = await fastify.inject({
        method,
        url: '/api/test/things/7',
        headers: { 'x-csrftoken': 'a'.repeat(32), cookie: `csrftoken=${'b'.repeat(32)}` },
      });
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { detail: 'CSRF Failed: CSRF token incorrect.' });
      assert.deepEqual(handled, []);
    });

    test(`${method} from a trusted origin passes the check`, async () => {
      const response = await fastify.inject({
        method,
        url: '/api/test/things/7',
        headers: { origin: TRUSTED, host: 'localhost' },
      });
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers['access-control-allow-origin'], TRUSTED);
    });
  }

  test('GET and HEAD are safe: no CSRF check, whatever the origin', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const response = await fastify.inject({
        method,
        url: '/api/test/things/7',
        headers: { origin: 'https://evil.example', host: 'localhost' },
      });
      assert.equal(response.statusCode, 200, method);
      assert.equal(response.headers['allow'], ALL, method);
    }
  });

  test('OPTIONS describes the endpoint and answers a trusted preflight with every method', async () => {
    const plain = await fastify.inject({ method: 'OPTIONS', url: '/api/test/things/7' });
    assert.equal(plain.statusCode, 200);
    assert.equal(plain.headers['allow'], ALL);
    assert.deepEqual(plain.json(), { name: 'Thing', methods: ALL.split(', ') });
    assert.equal(plain.headers['access-control-allow-methods'], undefined);
    const preflight = await fastify.inject({
      method: 'OPTIONS',
      url: '/api/test/things/7',
      headers: { origin: TRUSTED, 'access-control-request-method': 'PATCH' },
    });
    assert.equal(preflight.statusCode, 200);
    assert.equal(preflight.headers['access-control-allow-methods'], ALL);
    assert.equal(preflight.headers['access-control-allow-origin'], TRUSTED);
  });

  test('a method it does not declare is a 405 with Allow', async () => {
    for (const method of ['PROPFIND', 'TRACE'] as const) {
      const response = await fastify.inject({ method, url: '/api/test/things/7' });
      assert.equal(response.statusCode, 405, method);
      assert.equal(response.headers['allow'], ALL, method);
      assert.deepEqual(response.json(), { detail: `Method "${method}" not allowed.` });
    }
  });
});

describe('an endpoint declaring some methods', () => {
  test('PATCH alone: Allow is PATCH and OPTIONS, every other method a 405 before any CSRF check (§1)', async () => {
    const allowed = await fastify.inject({ method: 'PATCH', url: '/api/test/patch-only/1' });
    assert.equal(allowed.statusCode, 200);
    assert.equal(allowed.headers['allow'], 'PATCH, OPTIONS');
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'] as const) {
      const response = await fastify.inject({
        method,
        url: '/api/test/patch-only/1',
        headers: { origin: 'https://evil.example', host: 'localhost' },
      });
      assert.equal(response.statusCode, 405, method);
      assert.equal(response.headers['allow'], 'PATCH, OPTIONS', method);
      if (method !== 'HEAD') assert.deepEqual(response.json(), { detail: `Method "${method}" not allowed.` });
    }
    const options = await fastify.inject({ method: 'OPTIONS', url: '/api/test/patch-only/1' });
    assert.deepEqual(options.json(), { name: 'Patch Only', methods: ['PATCH', 'OPTIONS'] });
  });

  test('Allow lists the methods in one order, whatever order they were declared in', async () => {
    const response = await fastify.inject({
      method: 'PUT',
      url: '/api/test/put-and-get/2',
      headers: { 'content-type': 'application/json' },
      payload: '{"a":1}',
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['allow'], 'GET, HEAD, PUT, OPTIONS');
    const patch = await fastify.inject({ method: 'PATCH', url: '/api/test/put-and-get/2' });
    assert.equal(patch.statusCode, 405);
    assert.equal(patch.headers['allow'], 'GET, HEAD, PUT, OPTIONS');
  });
});
