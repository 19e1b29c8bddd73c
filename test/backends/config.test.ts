// Contract §8 configuration: AUTH_BACKENDS and the LDAP_* settings, and AUTH_CONFIG=FILE validated
// against the published JSON Schema at start-up (a bad file stops start-up naming the bad entry's
// path); `clubhouse config check` shows the backends with secrets masked.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { runCli } from '../../src/cli/main.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';

const dir = mkdtempSync(join(tmpdir(), 'clubhouse-auth-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function configFile(document: unknown): string {
  const file = join(dir, `auth-${files++}.json`);
  writeFileSync(file, typeof document === 'string' ? document : JSON.stringify(document));
  return file;
}

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

const LDAP = {
  AUTH_BACKENDS: 'ldap',
  LDAP_URL: 'ldaps://dir.example.org',
  LDAP_USER_DN: 'uid={username},dc=example,dc=org',
};

describe('AUTH_BACKENDS and the LDAP settings', () => {
  test('the default is the one IMAP server of §5', () => {
    const config = loadConfig({ IMAP_HOST: 'mail.example.org' });
    assert.deepEqual(
      config.auth.backends.map((b) => [b.kind, b.name, b.domains]),
      [['imap', 'imap', null]],
    );
  });

  test('ldap reads the LDAP settings with their defaults', () => {
    const [spec] = loadConfig({ ...LDAP, AUTH_BACKENDS: 'ldap,imap', IMAP_HOST: 'mail.example.org' }).auth
      .backends;
    assert.equal(spec?.kind, 'ldap');
    assert.deepEqual(spec?.kind === 'ldap' ? spec.ldap : null, {
      url: 'ldaps://dir.example.org',
      security: 'tls',
      allowPlaintext: false,
      caFile: null,
      userDn: 'uid={username},dc=example,dc=org',
      bindDn: null,
      bindPassword: null,
      baseDn: null,
      userFilter: '(uid={username})',
      timeoutMs: 5000,
      maxConcurrency: 32,
      queueLimit: 1000,
    });
    const starttls = loadConfig({ ...LDAP, LDAP_URL: 'ldap://dir.example.org' }).auth.backends[0];
    assert.equal(starttls?.kind === 'ldap' ? starttls.ldap.security : null, 'starttls');
  });

  test("a kind's settings are read only when it is listed", () => {
    // An invalid IMAP setting does not matter when only ldap is asked, and the reverse.
    assert.doesNotThrow(() => loadConfig({ ...LDAP, IMAP_PORT: 'not a port' }));
    assert.doesNotThrow(() => loadConfig({ LDAP_TIMEOUT_MS: 'soon', IMAP_HOST: 'mail.example.org' }));
    assert.equal(refusal({ ...LDAP, AUTH_BACKENDS: 'ldap,imap', IMAP_PORT: 'x' }).variable, 'IMAP_PORT');
  });

  const bad: [Record<string, string>, string][] = [
    [{ AUTH_BACKENDS: 'imap,kerberos' }, 'AUTH_BACKENDS'],
    [{ AUTH_BACKENDS: 'imap,imap' }, 'AUTH_BACKENDS'],
    [{ AUTH_BACKENDS: 'ldap' }, 'LDAP_URL'],
    [{ ...LDAP, LDAP_URL: 'https://dir.example.org' }, 'LDAP_URL'],
    [{ ...LDAP, LDAP_URL: 'ldaps://dir.example.org/dc=example' }, 'LDAP_URL'],
    [{ ...LDAP, LDAP_SECURITY: 'starttls' }, 'LDAP_SECURITY'],
    [{ ...LDAP, LDAP_URL: 'ldap://dir.example.org', LDAP_SECURITY: 'tls' }, 'LDAP_SECURITY'],
    [{ ...LDAP, LDAP_URL: 'ldap://dir.example.org', LDAP_SECURITY: 'plain' }, 'LDAP_SECURITY'],
    [{ ...LDAP, LDAP_USER_DN: 'uid=alice,dc=example,dc=org' }, 'LDAP_USER_DN'],
    [{ ...LDAP, LDAP_BIND_DN: 'cn=svc' }, 'LDAP_USER_DN'],
    [{ AUTH_BACKENDS: 'ldap', LDAP_URL: 'ldaps://d.example' }, 'LDAP_USER_DN'],
    [
      { AUTH_BACKENDS: 'ldap', LDAP_URL: 'ldaps://d.example', LDAP_BIND_DN: 'cn=svc', LDAP_BASE_DN: 'dc=x' },
      'LDAP_BIND_PASSWORD',
    ],
    [
      {
        AUTH_BACKENDS: 'ldap',
        LDAP_URL: 'ldaps://d.example',
        LDAP_BIND_DN: 'cn=svc',
        LDAP_BIND_PASSWORD: 'p',
      },
      'LDAP_BASE_DN',
    ],
    [{ ...LDAP, LDAP_USER_FILTER: 'uid={username}' }, 'LDAP_USER_FILTER'],
    [{ ...LDAP, LDAP_CA_FILE: '/nonexistent/ca.pem' }, 'LDAP_CA_FILE'],
    [{ ...LDAP, LDAP_TIMEOUT_MS: '0' }, 'LDAP_TIMEOUT_MS'],
  ];
  for (const [env, variable] of bad) {
    test(`${JSON.stringify(env)} is refused, naming ${variable}`, () => {
      assert.equal(refusal(env).variable, variable);
    });
  }

  test('plain LDAP is allowed to loopback, or by name', () => {
    assert.doesNotThrow(() => loadConfig({ ...LDAP, LDAP_URL: 'ldap://127.0.0.1', LDAP_SECURITY: 'plain' }));
    assert.doesNotThrow(() =>
      loadConfig({
        ...LDAP,
        LDAP_URL: 'ldap://d.example',
        LDAP_SECURITY: 'plain',
        LDAP_ALLOW_PLAINTEXT: 'true',
      }),
    );
  });
});

describe('AUTH_CONFIG=FILE', () => {
  test('the example in docs/ is valid, and it replaces the environment settings of the backends', () => {
    const config = loadConfig({ AUTH_CONFIG: 'docs/auth-config.example.json', IMAP_HOST: 'ignored.example' });
    assert.deepEqual(
      config.auth.backends.map((b) => [b.name, b.kind, b.domains]),
      [
        ['staff-directory', 'ldap', ['school.example']],
        ['school-mail', 'imap', ['school.example']],
        ['students-mail', 'imap', ['students.example']],
      ],
    );
    assert.equal(config.imap.host, null);
    const students = config.auth.backends[2];
    assert.equal(students?.kind === 'imap' ? students.imap.port : null, 143);
  });

  const entry = { name: 'mail', kind: 'imap', host: 'mail.example.org' };
  const invalid: [string, unknown, RegExp][] = [
    ['not JSON', '{"backends": [', /^AUTH_CONFIG: .*not readable JSON/],
    ['no backends', {}, /^AUTH_CONFIG: .*: backends: must have required property/],
    ['an empty list', { backends: [] }, /: backends: .*fewer than 1/],
    ['an unknown kind', { backends: [{ ...entry, kind: 'kerberos' }] }, /: backends\[0\]\.kind: /],
    [
      'a port out of range',
      { backends: [entry, { ...entry, name: 'two', port: 70000 }] },
      /: backends\[1\]\.port: /,
    ],
    ['an unknown field', { backends: [{ ...entry, passwrd: 'x' }] }, /: backends\[0\]\.passwrd: /],
    ['a missing host', { backends: [{ name: 'mail', kind: 'imap' }] }, /: backends\[0\]\.host: /],
    [
      'a bad domain',
      { backends: [{ ...entry, domains: ['Not A Domain'] }] },
      /: backends\[0\]\.domains\[0\]: /,
    ],
    ['a name used twice', { backends: [entry, entry] }, /: backends\[1\]\.name: "mail" is used twice/],
    [
      'a name that clashes with /readyz',
      { backends: [{ ...entry, name: 'stores' }] },
      /: backends\[0\]\.name: /,
    ],
    [
      'ldap with both bind modes',
      {
        backends: [
          {
            name: 'd',
            kind: 'ldap',
            url: 'ldaps://d.example',
            userDn: 'uid={username}',
            bindDn: 'cn=s',
            bindPassword: 'p',
            baseDn: 'dc=x',
          },
        ],
      },
      /: backends\[0\]/,
    ],
    [
      'ldap with a bind DN but no password',
      { backends: [{ name: 'd', kind: 'ldap', url: 'ldaps://d.example', bindDn: 'cn=s', baseDn: 'dc=x' }] },
      /: backends\[0\]/,
    ],
    [
      'plain LDAP to a remote host',
      {
        backends: [
          { name: 'd', kind: 'ldap', url: 'ldap://d.example', security: 'plain', userDn: 'uid={username}' },
        ],
      },
      /: backends\[0\]\.security: plain sends passwords in clear/,
    ],
    [
      'the client address forwarded over plain text',
      { backends: [{ ...entry, host: '127.0.0.1', security: 'plain', forwardClientIp: true }] },
      /: backends\[0\]\.forwardClientIp: needs TLS/,
    ],
    [
      'plain IMAP to a remote host',
      { backends: [{ ...entry, security: 'plain' }] },
      /: backends\[0\]\.security: plain sends passwords in clear/,
    ],
  ];
  for (const [what, document, message] of invalid) {
    test(`an invalid file stops start-up naming the bad entry: ${what}`, () => {
      const error = refusal({ AUTH_CONFIG: configFile(document) });
      assert.match(error.message, message);
    });
  }

  test('npm start with an invalid file exits 2 with one line naming the path of the bad entry', () => {
    const file = configFile({ backends: [entry, { ...entry, name: 'two', port: 0 }] });
    const result = spawnSync(process.execPath, ['src/main.ts'], {
      env: { PATH: process.env['PATH'], AUTH_CONFIG: file },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 2);
    assert.match(
      result.stderr.trim(),
      new RegExp(`^clubhouse: invalid setting AUTH_CONFIG: ${file}: backends\\[1\\]\\.port: must be >= 1`),
    );
  });

  test('npm start serves with AUTH_BACKENDS=ldap and no IMAP_HOST (IMAP settings are read only when listed)', async () => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', 'src/main.ts'], {
      env: {
        PATH: process.env['PATH'],
        PORT: '0',
        DATABASE_URL: `sqlite:${join(dir, 'serve.db')}`,
        AUTH_BACKENDS: 'ldap',
        LDAP_URL: 'ldaps://127.0.0.1:1',
        LDAP_USER_DN: 'uid={username},dc=example,dc=org',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const serving = new Promise<boolean>((resolve) => {
      child.stdout.on('data', (chunk) => {
        output += chunk;
        if (output.includes('clubhouse is serving')) resolve(true);
      });
      child.stderr.on('data', (chunk) => {
        output += chunk;
      });
      child.once('exit', () => resolve(false));
    });
    const served = await serving;
    if (child.exitCode === null) child.kill('SIGTERM');
    const [code] = child.exitCode === null ? await once(child, 'exit') : [child.exitCode];
    assert.ok(served, output);
    assert.equal(code, 0, output);
  });

  test('the client address may be forwarded over STARTTLS, as with IMAP_FORWARD_CLIENT_IP', () => {
    const file = configFile({ backends: [{ ...entry, security: 'starttls', forwardClientIp: true }] });
    const [spec] = loadConfig({ AUTH_CONFIG: file }).auth.backends;
    assert.equal(spec?.kind === 'imap' ? spec.imap.forwardClientIp : null, true);
  });

  test('the published schema is itself a valid JSON Schema 2020-12 and accepts the example', () => {
    const schema = JSON.parse(readFileSync('docs/auth-config.schema.json', 'utf8'));
    const validate = new Ajv2020({ strict: true, strictRequired: false }).compile(schema);
    assert.equal(validate(JSON.parse(readFileSync('docs/auth-config.example.json', 'utf8'))), true);
  });
});

describe('clubhouse config check shows the backends', () => {
  test('in order, with the service-account password masked', async () => {
    const out: string[] = [];
    const code = await runCli(
      ['config', 'check', '--json'],
      { AUTH_CONFIG: 'docs/auth-config.example.json' },
      {
        out: (t) => out.push(t),
        err: () => undefined,
      },
    );
    assert.equal(code, 0);
    const report = JSON.parse(out.join('\n'));
    assert.deepEqual(
      report.backends.map((b: { name: string }) => b.name),
      ['staff-directory', 'school-mail', 'students-mail'],
    );
    assert.equal(report.backends[0].bindPassword, '***');
    assert.ok(!out.join('\n').includes('service-account-password'));
    assert.equal(report.settings.AUTH_CONFIG, 'docs/auth-config.example.json');
  });

  test('LDAP_BIND_PASSWORD is masked in the settings too', async () => {
    const out: string[] = [];
    const env = {
      AUTH_BACKENDS: 'ldap',
      LDAP_URL: 'ldaps://d.example',
      LDAP_BIND_DN: 'cn=svc',
      LDAP_BIND_PASSWORD: 'hunter2-ldap',
      LDAP_BASE_DN: 'dc=x',
    };
    await runCli(['config', 'check'], env, { out: (t) => out.push(t), err: () => undefined });
    const text = out.join('\n');
    assert.ok(!text.includes('hunter2-ldap'), text);
    assert.match(text, /LDAP_BIND_PASSWORD\s+\*\*\*/);
    assert.match(text, /backend 1: .*"kind":"ldap"/);
  });
});
