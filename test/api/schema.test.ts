// GET /api/schema is an OpenAPI 3.1 document generated from the route schemas the server uses, and it
// is valid.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { fakeAuthenticator, startTestApp, type TestApp } from '../helpers/app.ts';

describe('/api/schema', () => {
  let t: TestApp;
  // biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is walked by path in these assertions.
  let doc: Record<string, any>;
  before(async () => {
    // With passkeys on (contract §12): a PUBLIC_URL whose host is a name.
    t = await startTestApp({
      authenticator: fakeAuthenticator({}),
      env: { PUBLIC_URL: 'http://localhost:8000' },
    });
    const response = await t.fastify.inject({ url: '/api/schema' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['allow'], 'GET, HEAD, OPTIONS');
    assert.match(String(response.headers['content-type']), /^application\/json/);
    doc = response.json();
  });
  after(() => t.close());

  test('validates as OpenAPI 3.1', async () => {
    assert.equal(doc['openapi'], '3.1.0');
    const result = await new Validator().validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
  });

  test('documents every endpoint with its methods, and nothing else', () => {
    const paths = Object.fromEntries(
      Object.entries(doc['paths'] as Record<string, object>).map(([path, ops]) => [
        path,
        Object.keys(ops).sort(),
      ]),
    );
    assert.deepEqual(paths, {
      '/api/auth/check': ['get'],
      '/api/auth/login': ['post'],
      '/api/auth/logout': ['post'],
      '/api/auth/logout-everywhere': ['post'],
      // contract §10: sign-in at an identity provider.
      '/api/auth/oidc/{name}/callback': ['get'],
      '/api/auth/oidc/{name}/start': ['get'],
      // contract §12: passkeys.
      '/api/auth/passkeys': ['get', 'post'],
      '/api/auth/passkeys/authentication': ['post'],
      '/api/auth/passkeys/login': ['post'],
      '/api/auth/passkeys/registration': ['post'],
      '/api/auth/passkeys/settings': ['get', 'put'],
      '/api/auth/passkeys/{id}': ['delete', 'patch'],
      '/api/auth/providers': ['get'],
      '/api/auth/sessions': ['get'],
      '/api/auth/sessions/{id}': ['delete'],
      '/api/group': ['get'],
      '/api/group/{id}': ['get'],
      '/healthz': ['get'],
      '/readyz': ['get'],
    });
  });

  test('the group schemas are the ones the responses are serialized with', () => {
    const detail =
      doc['paths']['/api/group/{id}']['get']['responses']['200']['content']['application/json']['schema'];
    assert.deepEqual(Object.keys(detail.properties).sort(), [
      'activities',
      'description',
      'id',
      'member_status',
      'name',
      'short_description',
      'type',
    ]);
    assert.deepEqual(detail.properties.member_status.enum, [-1, 0, 1, 2]);
    const list =
      doc['paths']['/api/group']['get']['responses']['200']['content']['application/json']['schema'];
    assert.equal(list.type, 'array');
    assert.ok(!('member_status' in list.items.properties));
    const login = doc['paths']['/api/auth/login']['post'];
    assert.deepEqual(login.requestBody.content['application/json'].schema.required, ['username', 'password']);
    assert.deepEqual(Object.keys(login.responses).sort(), ['200', '400', '403', '413', '415', '429', '503']);
  });

  test('contract §9: the session list is described field by field, and the delete by its 204 and 404', () => {
    const list =
      doc['paths']['/api/auth/sessions']['get']['responses']['200']['content']['application/json']['schema'];
    assert.equal(list.type, 'array');
    assert.deepEqual(Object.keys(list.items.properties).sort(), [
      'created',
      'current',
      'id',
      'ip',
      'last_seen',
      'method',
      'user_agent',
    ]);
    assert.equal(list.items.properties.id.minLength, 16);
    const remove = doc['paths']['/api/auth/sessions/{id}']['delete'];
    assert.deepEqual(Object.keys(remove.responses).sort(), ['204', '403', '404', '503']);
    assert.deepEqual(Object.keys(doc['paths']['/api/auth/logout-everywhere']['post']['responses']).sort(), [
      '200',
      '403',
      '503',
    ]);
  });

  test('contract §12: the passkeys are described field by field, the ceremonies by their WebAuthn JSON', () => {
    const list =
      doc['paths']['/api/auth/passkeys']['get']['responses']['200']['content']['application/json']['schema'];
    assert.deepEqual(Object.keys(list.items.properties).sort(), [
      'cloned',
      'created',
      'id',
      'last_used',
      'name',
      'synced',
      'transports',
    ]);
    const create = doc['paths']['/api/auth/passkeys']['post'];
    assert.deepEqual(create.requestBody.content['application/json'].schema.required, ['credential']);
    assert.deepEqual(Object.keys(create.responses).sort(), ['201', '400', '403', '413', '503']);
    const login = doc['paths']['/api/auth/passkeys/login']['post'];
    assert.deepEqual(Object.keys(login.responses).sort(), ['200', '400', '403', '413', '429', '503']);
    const settings =
      doc['paths']['/api/auth/passkeys/settings']['get']['responses']['200']['content']['application/json'][
        'schema'
      ];
    assert.deepEqual(Object.keys(settings.properties).sort(), ['can_change', 'password_sign_in']);
  });
});
