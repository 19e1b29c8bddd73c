// Contract §10's endpoints as HTTP (§1's headers, Allow, OPTIONS, HEAD, 405, 404 for an unknown
// provider), `next` (never anywhere but this origin), and the configuration: the schema, PUBLIC_URL,
// and `config check` masking the client secret.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { localNext } from '../../src/auth/oidc-signin.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { configReport } from '../../src/config/report.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import {
  type OidcHarness,
  PUBLIC_URL,
  startOidcHarness,
  TestBrowser,
  untilCallback,
} from '../helpers/oidc.ts';

let harness: OidcHarness;
let app: TestApp;
before(async () => {
  harness = await startOidcHarness();
  app = await startTestApp({ env: harness.env });
});
after(async () => {
  await app?.close();
  await harness?.stop();
});

const COMMON_HEADERS = {
  'x-frame-options': 'SAMEORIGIN',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

function assertCommonHeaders(headers: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(COMMON_HEADERS)) assert.equal(headers[name], value, name);
}

describe('the endpoints (contract §1, §10)', () => {
  test('GET /api/auth/providers lists name and label, in AUTH_CONFIG order', async () => {
    const response = await app.fastify.inject({ url: '/api/auth/providers' });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['allow'], 'GET, HEAD, OPTIONS');
    assertCommonHeaders(response.headers);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(response.body), [
      { name: 'school', label: 'Sign in with School' },
      { name: 'other', label: 'Sign in with Other' },
    ]);
    // AUTH_CONFIG lists no password backend here: the web client shows the buttons alone.
    assert.equal(response.headers['x-password-login'], 'false');
  });

  test('without providers: [] (and the password backend of the environment)', async () => {
    const plain = await startTestApp();
    try {
      const response = await plain.fastify.inject({ url: '/api/auth/providers' });
      assert.equal(response.statusCode, 200);
      assert.equal(response.body, '[]');
      assert.equal(response.headers['x-password-login'], 'true');
      // contract §12: no PUBLIC_URL, so passkeys are off and the web client shows none.
      assert.equal(response.headers['x-passkeys'], 'false');
      const start = await plain.fastify.inject({ url: '/api/auth/oidc/school/start' });
      assert.equal(start.statusCode, 404);
    } finally {
      await plain.close();
    }
  });

  for (const endpoint of ['start', 'callback']) {
    test(`${endpoint}: an unknown provider is 404 {"detail": "Not found."}, with Allow and the headers`, async () => {
      const response = await app.fastify.inject({ url: `/api/auth/oidc/nobody/${endpoint}?next=/` });
      assert.equal(response.statusCode, 404);
      assert.equal(response.body, '{"detail":"Not found."}');
      assert.equal(response.headers['allow'], 'GET, HEAD, OPTIONS');
      assertCommonHeaders(response.headers);
      assert.equal(response.headers['set-cookie'], undefined);
    });

    test(`${endpoint}: OPTIONS describes it, POST is 405 with Allow, a trailing slash is the same`, async () => {
      const url = `/api/auth/oidc/school/${endpoint}`;
      const options = await app.fastify.inject({ method: 'OPTIONS', url });
      assert.equal(options.statusCode, 200);
      assert.equal(options.headers['allow'], 'GET, HEAD, OPTIONS');
      assert.deepEqual(JSON.parse(options.body).methods, ['GET', 'HEAD', 'OPTIONS']);
      const post = await app.fastify.inject({ method: 'POST', url });
      assert.equal(post.statusCode, 405);
      assert.equal(post.body, '{"detail":"Method \\"POST\\" not allowed."}');
      assert.equal(post.headers['allow'], 'GET, HEAD, OPTIONS');
      const slash = await app.fastify.inject({ url: `${url}/` });
      assert.equal(slash.statusCode, 302);
    });
  }

  test('start answers 302 with the headers of §1 and the state cookie', async () => {
    const response = await app.fastify.inject({ url: '/api/auth/oidc/school/start' });
    assert.equal(response.statusCode, 302);
    assertCommonHeaders(response.headers);
    assert.ok(String(response.headers['location']).startsWith(`${harness.school.issuer}/auth?`));
    assert.match(String(response.headers['set-cookie']), /^oidc_flow=[A-Za-z0-9_-]{43}; Max-Age=600; /);
  });

  test('HEAD start answers as GET does, without a body', async () => {
    const response = await app.fastify.inject({ method: 'HEAD', url: '/api/auth/oidc/school/start' });
    assert.equal(response.statusCode, 302);
    assert.equal(response.body, '');
  });

  test('COOKIE_SECURE makes the state cookie Secure, and its clearing too', async () => {
    const secure = await startTestApp({ env: { ...harness.env, COOKIE_SECURE: 'true' } });
    try {
      const start = await secure.fastify.inject({ url: '/api/auth/oidc/school/start' });
      assert.match(String(start.headers['set-cookie']), /; HttpOnly; Secure; SameSite=Lax$/);
      const callback = await secure.fastify.inject({ url: '/api/auth/oidc/school/callback?state=x&code=y' });
      assert.match(String(callback.headers['set-cookie']), /^oidc_flow=; .*; Secure$/);
    } finally {
      await secure.close();
    }
  });

  test('the callback’s query string never reaches a log line', async () => {
    await app.fastify.inject({
      url: '/api/auth/oidc/school/callback?code=code-in-the-url&state=state-in-the-url',
    });
    const logged = app.logs.join('\n');
    assert.ok(logged.includes('/api/auth/oidc/school/callback?[redacted]'), 'the access line is there');
    assert.ok(!logged.includes('code-in-the-url'));
    assert.ok(!logged.includes('state-in-the-url'));
  });
});

describe('next: only a local path (no open redirect)', () => {
  const HOSTILE = [
    'https://evil.example/',
    'http:evil.example',
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    '/%0d%0aLocation:%20https://evil.example',
    'javascript:alert(1)',
    ' /group/3',
    'group/3',
    '/..//evil.example',
    `/${'a'.repeat(3000)}`,
  ];

  test('localNext keeps local paths and turns everything else into /', () => {
    assert.equal(localNext(undefined), '/');
    assert.equal(localNext('/group/3'), '/group/3');
    assert.equal(localNext('/sessions?x=1#top'), '/sessions?x=1#top');
    assert.equal(localNext('/gruppe/ä'), '/gruppe/%C3%A4');
    for (const value of HOSTILE) {
      const next = localNext(value);
      assert.ok(
        next === '/' || (next.startsWith('/') && !next.startsWith('//')),
        `${JSON.stringify(value)} → ${next}`,
      );
      assert.equal(new URL(next, PUBLIC_URL).origin, PUBLIC_URL, JSON.stringify(value));
    }
    assert.equal(
      localNext('/%0d%0aLocation:%20https://evil.example'),
      '/%0d%0aLocation:%20https://evil.example',
    );
  });

  test('after a whole sign-in, hostile values of next land on this origin', async () => {
    for (const value of ['https://evil.example/', '//evil.example', '/\\evil.example', '/\t/evil.example']) {
      const person = new TestBrowser(app.fastify, harness.providerFetch);
      const { callback } = await untilCallback(person, 'school', 'bob', 'bob-provider-password', value);
      const done = await person.get(callback.href);
      assert.equal(done.status, 302);
      assert.equal(done.location, `${PUBLIC_URL}/`, JSON.stringify(value));
    }
  });
});

describe('configuration', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-oidc-config-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const provider = {
    kind: 'oidc',
    name: 'school',
    label: 'Sign in with School',
    issuer: 'https://login.school.example',
    clientId: 'clubhouse',
    clientSecret: 'the-client-secret-value',
  };
  const configFile = (backends: unknown[]) => {
    const file = path.join(dir, `auth-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ backends }));
    return file;
  };
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.message;
    }
    assert.fail('the configuration was accepted');
  };

  test('a provider needs PUBLIC_URL: start-up names it', () => {
    assert.match(
      refusal({ AUTH_CONFIG: configFile([provider]) }),
      /^PUBLIC_URL: required with an oidc backend/,
    );
    assert.match(
      refusal({ AUTH_CONFIG: configFile([provider]), PUBLIC_URL: 'https://club.example.org/app' }),
      /^PUBLIC_URL: .*no path/,
    );
  });

  test('the schema names the bad entry: http issuer, no secret nor key, both, scopes without openid', () => {
    const env = (entry: Record<string, unknown>) => ({
      AUTH_CONFIG: configFile([{ kind: 'imap', name: 'mail', host: 'mail.example' }, entry]),
      PUBLIC_URL: 'https://club.example.org',
    });
    assert.match(
      refusal(env({ ...provider, issuer: 'http://login.school.example' })),
      /backends\[1\]\.issuer: must match pattern/,
    );
    const { clientSecret: _, ...noSecret } = provider;
    assert.match(refusal(env(noSecret)), /backends\[1\].*clientSecret/);
    assert.match(refusal(env({ ...provider, privateKeyFile: 'package.json' })), /backends\[1\]/);
    assert.match(
      refusal(env({ ...provider, scopes: 'email profile' })),
      /backends\[1\]\.scopes: must include openid/,
    );
    assert.match(refusal(env({ ...provider, name: 'mail' })), /backends\[1\]\.name: "mail" is used twice/);
    assert.match(
      refusal(env({ ...provider, tenant: 'x' })),
      /backends\[1\]\.tenant: must NOT have additional properties/,
    );
  });

  test('providers are not password backends; config check shows them with the secret masked', () => {
    const config = loadConfig({
      AUTH_CONFIG: configFile([{ kind: 'imap', name: 'mail', host: 'mail.example' }, provider]),
      PUBLIC_URL: 'https://club.example.org/',
    });
    assert.deepEqual(
      config.auth.backends.map((b) => b.name),
      ['mail'],
    );
    const [school] = config.auth.providers;
    assert.equal(school?.redirectUri, 'https://club.example.org/api/auth/oidc/school/callback');
    assert.equal(school?.scope, 'openid email profile');
    assert.equal(school?.usernameClaim, 'email');
    const report = JSON.stringify(configReport(config));
    assert.ok(!report.includes('the-client-secret-value'), 'the secret is masked');
    assert.ok(report.includes('"clientSecret":"***"'));
    assert.ok(report.includes('"redirectUri":"https://club.example.org/api/auth/oidc/school/callback"'));
  });

  test('config check warns of a PUBLIC_URL in clear on a public name', () => {
    const config = loadConfig({ AUTH_CONFIG: configFile([provider]), PUBLIC_URL: 'http://club.example.org' });
    assert.ok(
      configReport(config).warnings.some((warning) =>
        warning.startsWith('PUBLIC_URL=http://club.example.org is not https'),
      ),
    );
  });
});
