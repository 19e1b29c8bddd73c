// Secrets from files (docs/deploy.md): every secret setting may be given as NAME_FILE, the path of a
// file holding it (compose and Kubernetes secrets arrive as files), and an identity provider's client
// secret as `clientSecretFile` in AUTH_CONFIG. The value is read and checked as the variable would
// be; both at once, an unreadable or an empty file stop start-up naming the variable; config check
// says where each came from and never shows it.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { runCli } from '../../src/cli/main.ts';
import { ConfigError, loadConfig } from '../../src/config/config.ts';
import { fileSettingNames } from '../../src/config/environment.ts';
import { configReport } from '../../src/config/report.ts';

let dir: string;
before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-secret-files-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A file holding `content`, as a compose secret would be mounted. */
function secretFile(content: string): string {
  const file = path.join(dir, `secret-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err;
  }
  assert.fail('the settings were accepted');
}

const SEARCH_BIND = {
  AUTH_BACKENDS: 'ldap',
  LDAP_URL: 'ldaps://dir.example.org',
  LDAP_BIND_DN: 'cn=svc,dc=example,dc=org',
  LDAP_BASE_DN: 'dc=example,dc=org',
};

describe('secret settings from NAME_FILE', () => {
  test('the secrets, and only they, can come from a file', () => {
    assert.deepEqual(fileSettingNames(), [
      'DATABASE_URL',
      'SESSION_STORE',
      'LDAP_BIND_PASSWORD',
      'SECRET_KEY',
    ]);
  });

  test('each is read from its file, surrounding white space (the final newline) trimmed', () => {
    const config = loadConfig({
      DATABASE_URL_FILE: secretFile('postgres://clubhouse:s3cret-db@db.internal/clubhouse\n'),
      SESSION_STORE_FILE: secretFile('  redis://:s3cret-redis@cache.internal:6379/0\r\n'),
      SECRET_KEY_FILE: secretFile(`${'k'.repeat(40)}\n`),
      ...SEARCH_BIND,
      LDAP_BIND_PASSWORD_FILE: secretFile('s3cret bind password\n'),
    });
    assert.equal(config.databaseUrl, 'postgres://clubhouse:s3cret-db@db.internal/clubhouse');
    assert.equal(config.sessionStore, 'redis://:s3cret-redis@cache.internal:6379/0');
    assert.equal(config.secretKey, 'k'.repeat(40));
    const [ldap] = config.auth.backends;
    assert.equal(ldap?.kind === 'ldap' ? ldap.ldap.bindPassword : null, 's3cret bind password');
  });

  test('a value from a file is checked as the variable is: the variable named is the setting', () => {
    const short = refusal({ SECRET_KEY_FILE: secretFile('too-short\n') });
    assert.equal(short.variable, 'SECRET_KEY');
    assert.match(short.message, /at least 32 characters/);
    assert.equal(refusal({ DATABASE_URL_FILE: secretFile('mysql://db/x') }).variable, 'DATABASE_URL');
  });

  test('both the variable and its file: refused, naming the file variable', () => {
    const error = refusal({
      DATABASE_URL: 'sqlite:one.db',
      DATABASE_URL_FILE: secretFile('sqlite:other.db'),
    });
    assert.equal(error.variable, 'DATABASE_URL_FILE');
    assert.match(error.message, /set DATABASE_URL or DATABASE_URL_FILE, not both/);
  });

  test('a missing, unreadable or empty file stops start-up rather than falling back to the default', () => {
    const missing = refusal({ DATABASE_URL_FILE: path.join(dir, 'absent') });
    assert.equal(missing.variable, 'DATABASE_URL_FILE');
    assert.match(missing.message, /cannot read ".*absent" \(ENOENT\)/);
    const empty = refusal({ DATABASE_URL_FILE: secretFile(' \n') });
    assert.equal(empty.variable, 'DATABASE_URL_FILE');
    assert.match(empty.message, /is empty/);
    // A directory is not a secret either (a compose secret whose source file was missing).
    assert.match(refusal({ SECRET_KEY_FILE: dir }).message, /cannot read .*\(EISDIR\)/);
    if (process.getuid?.() !== 0) {
      const locked = secretFile('x'.repeat(40));
      chmodSync(locked, 0o000);
      assert.match(refusal({ SECRET_KEY_FILE: locked }).message, /EACCES/);
    }
  });

  test('an empty NAME_FILE counts as unset, as an empty variable does', () => {
    assert.equal(loadConfig({ DATABASE_URL_FILE: '  ' }).databaseUrl, 'sqlite:data/clubhouse.db');
  });

  test('LDAP_BIND_PASSWORD_FILE is read only when LDAP is asked, as the variable is', () => {
    // Not listed: not even opened, so an IMAP deployment with a stale LDAP secret still starts.
    const config = loadConfig({ LDAP_BIND_PASSWORD_FILE: path.join(dir, 'absent') });
    assert.equal(config.settings.LDAP_BIND_PASSWORD, undefined);
    assert.equal(
      refusal({ ...SEARCH_BIND, LDAP_BIND_PASSWORD_FILE: path.join(dir, 'absent') }).variable,
      'LDAP_BIND_PASSWORD_FILE',
    );
  });

  test('a setting that is not a secret has no file variant', () => {
    assert.equal(loadConfig({ PORT_FILE: secretFile('9000') }).port, 8000);
  });

  test('config check says which file each secret came from, and never shows it', async () => {
    const databaseFile = secretFile(
      'postgres://clubhouse:s3cret-db@db.internal/clubhouse?sslmode=verify-full&sslrootcert=system\n',
    );
    const keyFile = secretFile(`${'k'.repeat(40)}\n`);
    const out: string[] = [];
    const code = await runCli(
      ['config', 'check', '--json'],
      { DATABASE_URL_FILE: databaseFile, SECRET_KEY_FILE: keyFile, IMAP_HOST: 'mail.example.org' },
      { out: (text) => out.push(text), err: (text) => out.push(text) },
    );
    assert.equal(code, 0, out.join('\n'));
    const report = JSON.parse(out.join('\n')) as { settings: Record<string, string> };
    assert.equal(
      report.settings['DATABASE_URL'],
      `postgres://clubhouse:***@db.internal/clubhouse?sslmode=verify-full&sslrootcert=system (from DATABASE_URL_FILE ${databaseFile})`,
    );
    assert.equal(report.settings['SECRET_KEY'], `*** (from SECRET_KEY_FILE ${keyFile})`);
    assert.equal(report.settings['SESSION_STORE'], '(the database)');
    assert.ok(!out.join('\n').includes('s3cret'));
    assert.ok(!out.join('\n').includes('kkkkkkkk'));
  });
});

describe("an identity provider's client secret from clientSecretFile (AUTH_CONFIG)", () => {
  const provider = {
    kind: 'oidc',
    name: 'school',
    label: 'Sign in with School',
    issuer: 'https://login.school.example',
    clientId: 'clubhouse',
  };
  const withProvider = (entry: Record<string, unknown>) => {
    const file = secretFile(JSON.stringify({ backends: [entry] }));
    return { AUTH_CONFIG: file, PUBLIC_URL: 'https://club.example.org' };
  };

  test('is read at start-up, trimmed, and masked by config check', () => {
    const config = loadConfig(
      withProvider({ ...provider, clientSecretFile: secretFile('the-client-secret\n') }),
    );
    const [school] = config.auth.providers;
    assert.deepEqual(school?.clientAuth, { method: 'client_secret_basic', secret: 'the-client-secret' });
    const report = JSON.stringify(configReport(config));
    assert.ok(!report.includes('the-client-secret'));
    assert.ok(report.includes('"clientSecret":"***"'));
  });

  test('with clientSecret or privateKeyFile too, or an unreadable or empty file: refused, naming the entry', () => {
    const file = secretFile('the-client-secret');
    assert.match(
      refusal(withProvider({ ...provider, clientSecretFile: file, clientSecret: 'x' })).message,
      /backends\[0\]/,
    );
    assert.match(
      refusal(withProvider({ ...provider, clientSecretFile: file, privateKeyFile: file })).message,
      /backends\[0\]/,
    );
    assert.match(
      refusal(withProvider({ ...provider, clientSecretFile: path.join(dir, 'absent') })).message,
      /backends\[0\]\.clientSecretFile: cannot read ".*absent" \(ENOENT\)/,
    );
    assert.match(
      refusal(withProvider({ ...provider, clientSecretFile: secretFile('\n') })).message,
      /backends\[0\]\.clientSecretFile: ".*" is empty/,
    );
  });
});
