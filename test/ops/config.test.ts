// Contract §6: settings parsed once, validated, frozen; a bad value names its variable.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { SETTINGS_PAGE, withSettingsTable } from '../../scripts/settings-table.ts';
import { runCli } from '../../src/cli/main.ts';
import { ConfigError, environmentWithDotenv, loadConfig } from '../../src/config/config.ts';
import { configReport } from '../../src/config/report.ts';
import { SETTINGS, type SettingName } from '../../src/config/settings.ts';

describe('loadConfig', () => {
  test('defaults', () => {
    const config = loadConfig({});
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8000);
    assert.equal(config.databaseUrl, 'sqlite:data/clubhouse.db');
    assert.equal(config.sessionStore, null);
    assert.equal(config.imap.host, null);
    assert.equal(config.imap.port, 993);
    assert.equal(config.imap.security, 'tls');
    assert.equal(config.imap.timeoutMs, 5000);
    assert.equal(config.imap.maxConcurrency, 32);
    assert.equal(config.http.cookieSecure, false);
    assert.deepEqual(config.http.trustedOrigins, []);
    assert.equal(config.http.trustProxy, false);
    assert.equal(config.usernameCase, 'lower');
    assert.equal(config.allowNewUsers, true);
    assert.deepEqual(config.throttle, {
      userFailures: 5,
      ipFailures: 50,
      windowSeconds: 900,
      ipv6PrefixLength: 64,
    });
    // contract §3: refusals answered no sooner than half a second after they began.
    assert.equal(config.authFailureDelayMs, 500);
    assert.equal(config.workers, 1);
  });

  test('the result is frozen all the way down', () => {
    const config = loadConfig({});
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.imap));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    });
  });

  test('values are parsed', () => {
    const config = loadConfig({
      PORT: '9000',
      IMAP_HOST: 'mail.example.org',
      IMAP_SECURITY: 'starttls',
      COOKIE_SECURE: 'yes',
      TRUSTED_ORIGINS: 'https://a.example, http://b.example:8080',
      TRUST_PROXY: '2',
      USERNAME_CASE: 'preserve',
      ALLOW_NEW_USERS: 'false',
    });
    assert.equal(config.port, 9000);
    assert.equal(config.imap.port, 143, 'STARTTLS defaults to 143');
    assert.equal(config.http.cookieSecure, true);
    assert.deepEqual(config.http.trustedOrigins, ['https://a.example', 'http://b.example:8080']);
    assert.equal(config.http.trustProxy, 2);
    assert.equal(config.usernameCase, 'preserve');
    assert.equal(config.allowNewUsers, false);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1' }).http.trustProxy, ['10.0.0.0/8', '::1']);
  });

  const bad: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ IMAP_SECURITY: 'ssl' }, 'IMAP_SECURITY'],
    [{ IMAP_HOST: 'mail.example.org', IMAP_SECURITY: 'plain' }, 'IMAP_SECURITY'],
    [{ IMAP_TIMEOUT_MS: '-1' }, 'IMAP_TIMEOUT_MS'],
    [{ IMAP_CA_FILE: '/nonexistent/ca.pem' }, 'IMAP_CA_FILE'],
    [{ IMAP_FORWARD_CLIENT_IP: 'true', IMAP_SECURITY: 'plain' }, 'IMAP_FORWARD_CLIENT_IP'],
    [{ COOKIE_SECURE: 'maybe' }, 'COOKIE_SECURE'],
    [{ TRUSTED_ORIGINS: 'https://a.example/path' }, 'TRUSTED_ORIGINS'],
    [{ TRUSTED_ORIGINS: 'not a url' }, 'TRUSTED_ORIGINS'],
    [{ TRUST_PROXY: 'proxy.example' }, 'TRUST_PROXY'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ SESSION_STORE: 'memcached://x' }, 'SESSION_STORE'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ USERNAME_CASE: 'upper' }, 'USERNAME_CASE'],
    [{ WORKERS: '0' }, 'WORKERS'],
    [{ SECRET_KEY: 'short' }, 'SECRET_KEY'],
  ];
  for (const [env, variable] of bad) {
    test(`${JSON.stringify(env)} is refused, naming ${variable}`, () => {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) =>
          err instanceof ConfigError && err.variable === variable && err.message.startsWith(`${variable}: `),
      );
    });
  }

  test('IMAP_FORWARD_CLIENT_IP is allowed over implicit TLS and STARTTLS (ID goes after TLS)', () => {
    for (const security of ['tls', 'starttls']) {
      const config = loadConfig({ IMAP_FORWARD_CLIENT_IP: 'true', IMAP_SECURITY: security });
      assert.equal(config.imap.forwardClientIp, true);
    }
  });

  test('plain IMAP is allowed to loopback, or by name', () => {
    assert.equal(loadConfig({ IMAP_HOST: '127.0.0.1', IMAP_SECURITY: 'plain' }).imap.security, 'plain');
    assert.equal(loadConfig({ IMAP_HOST: 'localhost', IMAP_SECURITY: 'plain' }).imap.security, 'plain');
    assert.equal(
      loadConfig({ IMAP_HOST: 'mail.example.org', IMAP_SECURITY: 'plain', IMAP_ALLOW_PLAINTEXT: 'true' }).imap
        .security,
      'plain',
    );
  });

  test('.env is read, and the real environment wins over it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'clubhouse-env-'));
    try {
      const file = join(dir, '.env');
      writeFileSync(file, 'PORT=9100\nIMAP_HOST=from-dotenv.example\n');
      const env = environmentWithDotenv({ PORT: '9200' }, file);
      const config = loadConfig(env);
      assert.equal(config.port, 9200);
      assert.equal(config.imap.host, 'from-dotenv.example');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('npm start with a bad setting', () => {
  test('stops with one line naming the variable, exit code 2', () => {
    const result = spawnSync(process.execPath, ['src/main.ts'], {
      env: { PATH: process.env['PATH'], PORT: 'nope', IMAP_HOST: 'localhost' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 2);
    assert.equal(
      result.stderr.trim(),
      'clubhouse: invalid setting PORT: expected a whole number from 0 to 65535, got "nope"',
    );
  });

  test('refuses to serve without IMAP_HOST', () => {
    const result = spawnSync(process.execPath, ['src/main.ts'], {
      env: { PATH: process.env['PATH'] },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /^clubhouse: invalid setting IMAP_HOST: required/);
  });
});

describe('clubhouse config check', () => {
  const run = async (env: Record<string, string>) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['config', 'check', '--json'], env, {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  test('prints the effective settings with secrets masked', async () => {
    const { code, out } = await run({
      // Verified TLS to both stores: plaintext to a remote host would be a warning.
      DATABASE_URL:
        'postgres://clubhouse:hunter2@db.internal/clubhouse?sslmode=verify-full&sslrootcert=system',
      SESSION_STORE: 'rediss://:redispass@cache.internal:6379',
      SECRET_KEY: 'k'.repeat(40),
      IMAP_HOST: 'mail.example.org',
    });
    assert.equal(code, 0);
    const report = JSON.parse(out);
    assert.equal(
      report.settings.DATABASE_URL,
      'postgres://clubhouse:***@db.internal/clubhouse?sslmode=verify-full&sslrootcert=system',
    );
    assert.equal(report.settings.SESSION_STORE, 'rediss://:***@cache.internal:6379');
    assert.equal(report.settings['(database TLS)'], 'verified');
    assert.equal(report.settings['(sessions TLS)'], 'verified');
    assert.equal(report.settings.SECRET_KEY, '***');
    assert.equal(report.settings.IMAP_HOST, 'mail.example.org');
    for (const secret of ['hunter2', 'redispass', 'kkkkkkkk']) assert.ok(!out.includes(secret));
    assert.deepEqual(report.warnings, []);
  });

  test('warns about plaintext IMAP, cookies that are not Secure, and a public /metrics', async () => {
    const { code, out } = await run({
      HOST: '0.0.0.0',
      IMAP_HOST: 'mail.example.org',
      IMAP_SECURITY: 'plain',
      IMAP_ALLOW_PLAINTEXT: 'true',
      TRUST_PROXY: '1',
      TRUSTED_ORIGINS: 'http://intranet.example',
    });
    assert.equal(code, 0);
    const { warnings } = JSON.parse(out) as { warnings: string[] };
    assert.ok(warnings.some((w) => w.startsWith('IMAP_SECURITY=plain')));
    assert.ok(warnings.some((w) => w.startsWith('COOKIE_SECURE=false behind a proxy')));
    assert.ok(warnings.some((w) => w.includes('http://intranet.example')));
    assert.ok(warnings.some((w) => w.includes('METRICS_PORT')));
  });

  test('contract §12: says whether passkeys are on and why not; PASSKEYS=on without a usable PUBLIC_URL exits 2 naming it', async () => {
    const imap = { IMAP_HOST: 'mail.example.org' };
    const off = JSON.parse((await run(imap)).out);
    assert.equal(
      off.settings['(passkeys)'],
      'off: PASSKEYS=auto: PUBLIC_URL is not set (the relying party id is its host)',
    );
    const byIp = JSON.parse((await run({ ...imap, PUBLIC_URL: 'https://192.0.2.1' })).out);
    assert.match(
      byIp.settings['(passkeys)'],
      /^off: PASSKEYS=auto: PUBLIC_URL's host 192\.0\.2\.1 is an IP address/,
    );
    const on = JSON.parse(
      (
        await run({
          ...imap,
          PUBLIC_URL: 'https://club.example.org',
          PASSKEY_ORIGINS: 'https://www.club.example.org',
        })
      ).out,
    );
    assert.equal(
      on.settings['(passkeys)'],
      'on, relying party club.example.org, origins https://club.example.org https://www.club.example.org',
    );
    const refusals: Record<string, string>[] = [
      { PASSKEYS: 'on' },
      { PASSKEYS: 'on', PUBLIC_URL: 'http://[::1]:8000' },
    ];
    for (const env of refusals) {
      const refused = await run({ ...imap, ...env });
      assert.equal(refused.code, 2, JSON.stringify(env));
      assert.match(refused.err, /PUBLIC_URL/);
    }
    assert.equal(
      JSON.parse((await run({ ...imap, PASSKEYS: 'off', PUBLIC_URL: 'https://club.example.org' })).out)
        .settings['(passkeys)'],
      'off: PASSKEYS=off',
    );
  });

  test('an invalid setting exits 2 naming it', async () => {
    const { code, err } = await run({ IMAP_TIMEOUT_MS: 'soon' });
    assert.equal(code, 2);
    assert.match(err, /IMAP_TIMEOUT_MS/);
  });
});

// One table (src/config/settings.ts) is the parser's, the report's and docs/configuration.md's source.
describe('the settings table', () => {
  // A non-default valid value for every setting; a new setting must be added here too.
  const OTHER_VALUES: Record<SettingName, string> = {
    HOST: '0.0.0.0',
    PORT: '8123',
    WORKERS: '3',
    ACCESS_LOG: 'true',
    DATABASE_URL: 'postgres://db.internal/clubhouse',
    DATABASE_CA_FILE: 'package.json',
    DATABASE_TRANSACTION_POOLER: 'true',
    REDIS_CA_FILE: 'package.json',
    SESSION_STORE: 'redis://cache.internal:6379',
    REDIS_KEY_PREFIX: 'other:',
    SQLITE_BUSY_TIMEOUT_MS: '1234',
    AUTH_BACKENDS: 'ldap',
    AUTH_CONFIG: 'docs/auth-config.example.json',
    PUBLIC_URL: 'https://club.example.org',
    IMAP_HOST: 'mail.example.org',
    IMAP_PORT: '1993',
    IMAP_SECURITY: 'starttls',
    IMAP_ALLOW_PLAINTEXT: 'true',
    IMAP_CA_FILE: 'package.json',
    IMAP_TIMEOUT_MS: '7000',
    IMAP_MAX_CONCURRENCY: '8',
    IMAP_QUEUE_LIMIT: '10',
    IMAP_FORWARD_CLIENT_IP: 'true',
    LDAP_URL: 'ldaps://dir.example.org:1636',
    LDAP_SECURITY: 'plain',
    LDAP_ALLOW_PLAINTEXT: 'true',
    LDAP_CA_FILE: 'package.json',
    LDAP_USER_DN: 'cn={username},dc=example,dc=org',
    LDAP_BIND_DN: 'cn=other,dc=example,dc=org',
    LDAP_BIND_PASSWORD: 'other-secret',
    LDAP_BASE_DN: 'ou=other,dc=example,dc=org',
    LDAP_USER_FILTER: '(mail={username})',
    LDAP_TIMEOUT_MS: '7000',
    LDAP_MAX_CONCURRENCY: '8',
    LDAP_QUEUE_LIMIT: '10',
    LDAP_GROUP_BASE_DN: 'ou=groups,dc=example,dc=org',
    LDAP_GROUP_FILTER: '(objectClass=groupOfNames)',
    LDAP_GROUP_CLASSROOM_FILTER: '(businessCategory=classroom)',
    LDAP_USERNAME_ATTRIBUTE: 'sAMAccountName',
    LDAP_GROUP_ID_ATTRIBUTE: 'objectGUID',
    LDAP_GROUP_SHORT_DESCRIPTION_ATTRIBUTE: 'displayName',
    LDAP_GROUP_ACTIVITIES_ATTRIBUTE: 'info',
    GROUP_SYNC_INTERVAL: '15m',
    GROUP_SYNC_MAX_REMOVALS: '25',
    GROUP_SYNC_TIMEOUT_MS: '60000',
    GROUP_SYNC_PAGE_SIZE: '100',
    PASSKEYS: 'off',
    PASSKEY_ORIGINS: 'https://www.club.example.org',
    PASSKEYS_RETIRE_PASSWORD: 'true',
    COOKIE_SECURE: 'true',
    TRUSTED_ORIGINS: 'https://app.example.org',
    ALLOWED_HOSTS: 'club.example.org',
    TRUST_PROXY: '1',
    USERNAME_CASE: 'preserve',
    ALLOW_NEW_USERS: 'false',
    THROTTLE_USER_FAILURES: '7',
    THROTTLE_IP_FAILURES: '70',
    THROTTLE_WINDOW_SECONDS: '600',
    THROTTLE_IPV6_PREFIX: '56',
    AUTH_FAILURE_DELAY_MS: '750',
    SECRET_KEY: 's'.repeat(40),
    METRICS_PORT: '9100',
    LOG_LEVEL: 'warn',
    SHUTDOWN_GRACE_MS: '5000',
    HEADERS_TIMEOUT_MS: '5000',
    REQUEST_TIMEOUT_MS: '20000',
    KEEP_ALIVE_TIMEOUT_MS: '5000',
  };
  // Settings that are only valid together with another one.
  const direct = {
    AUTH_BACKENDS: 'ldap',
    LDAP_URL: 'ldaps://dir.example.org',
    LDAP_USER_DN: 'uid={username},dc=example,dc=org',
  };
  const search = {
    AUTH_BACKENDS: 'ldap',
    LDAP_URL: 'ldaps://dir.example.org',
    LDAP_BIND_DN: 'cn=svc,dc=example,dc=org',
    LDAP_BIND_PASSWORD: 'svc-secret',
    LDAP_BASE_DN: 'dc=example,dc=org',
  };
  const groups = { ...search, LDAP_GROUP_BASE_DN: 'ou=groups,dc=example,dc=org' };
  const COMPANIONS: Partial<Record<SettingName, Record<string, string>>> = {
    IMAP_FORWARD_CLIENT_IP: { IMAP_SECURITY: 'tls' },
    DATABASE_CA_FILE: { DATABASE_URL: 'postgres://db.internal/clubhouse' },
    DATABASE_TRANSACTION_POOLER: { DATABASE_URL: 'postgres://db.internal/clubhouse' },
    REDIS_CA_FILE: { SESSION_STORE: 'rediss://cache.internal:6379' },
    AUTH_BACKENDS: { LDAP_URL: direct.LDAP_URL, LDAP_USER_DN: direct.LDAP_USER_DN },
    LDAP_URL: direct,
    LDAP_SECURITY: { ...direct, LDAP_URL: 'ldap://127.0.0.1' },
    LDAP_ALLOW_PLAINTEXT: direct,
    LDAP_CA_FILE: direct,
    LDAP_USER_DN: direct,
    LDAP_BIND_DN: search,
    LDAP_BIND_PASSWORD: search,
    LDAP_BASE_DN: search,
    LDAP_USER_FILTER: search,
    LDAP_TIMEOUT_MS: direct,
    LDAP_MAX_CONCURRENCY: direct,
    LDAP_QUEUE_LIMIT: direct,
    LDAP_GROUP_BASE_DN: search,
    LDAP_GROUP_FILTER: groups,
    LDAP_GROUP_CLASSROOM_FILTER: groups,
    LDAP_USERNAME_ATTRIBUTE: groups,
    LDAP_GROUP_ID_ATTRIBUTE: groups,
    LDAP_GROUP_SHORT_DESCRIPTION_ATTRIBUTE: groups,
    LDAP_GROUP_ACTIVITIES_ATTRIBUTE: groups,
    GROUP_SYNC_INTERVAL: groups,
    GROUP_SYNC_MAX_REMOVALS: groups,
    GROUP_SYNC_TIMEOUT_MS: groups,
    GROUP_SYNC_PAGE_SIZE: groups,
    // contract §12: passkeys are on (auto) once PUBLIC_URL names a host.
    PASSKEYS: { PUBLIC_URL: 'https://club.example.org' },
    PASSKEY_ORIGINS: { PUBLIC_URL: 'https://club.example.org' },
    PASSKEYS_RETIRE_PASSWORD: { PUBLIC_URL: 'https://club.example.org' },
  };
  const withoutTable = (config: ReturnType<typeof loadConfig>) => {
    const { settings: _settings, ...rest } = config;
    return JSON.stringify(rest);
  };

  test('every setting of the table reaches the Config: a different value gives a different Config', () => {
    assert.deepEqual(Object.keys(OTHER_VALUES).sort(), Object.keys(SETTINGS).sort());
    for (const [name, value] of Object.entries(OTHER_VALUES)) {
      const companions = COMPANIONS[name as SettingName] ?? {};
      const base = loadConfig(companions);
      const changed = loadConfig({ ...companions, [name]: value });
      assert.notEqual(withoutTable(changed), withoutTable(base), `${name} is parsed but not used`);
    }
  });

  test('config check lists every setting of the table, secrets masked', () => {
    const { settings } = configReport(
      loadConfig({ ...OTHER_VALUES, IMAP_SECURITY: 'tls', SESSION_STORE: 'rediss://cache.internal:6379' }),
    );
    const table = Object.keys(settings).filter((name) => !name.startsWith('('));
    assert.deepEqual(table, Object.keys(SETTINGS));
    assert.equal(settings['SECRET_KEY'], '***');
    assert.ok(!JSON.stringify(settings).includes('ssssssss'));
  });

  test('the settings table of docs/configuration.md is the rendering of the table (npm run docs:settings)', () => {
    const readme = readFileSync(SETTINGS_PAGE, 'utf8');
    assert.equal(readme, withSettingsTable(readme), 'run npm run docs:settings');
    for (const name of Object.keys(SETTINGS)) assert.ok(readme.includes(`| \`${name}\` |`), name);
  });
});
